//! The topology parser against real ibsim: for every example net file and the
//! built-in default fabric, start ibsim on it, run ibnetdiscover through
//! umad2sim, and check that every node GUID, port GUID, node type,
//! description and link agrees with what the parser produced.
//! Needs ibsim-utils and infiniband-diags; a missing tool fails the test.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ibpm_agentx::ib::topology;
use ibpm_agentx::ib::{Fabric, Guid, NodeType};

const EXAMPLES: &str = "/usr/share/doc/ibsim-utils/net-examples";
const UMAD2SIM: &str = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";
static SEQ: AtomicUsize = AtomicUsize::new(0);

/// A temp dir and an ibsim process, both gone on drop.
struct Sim {
    dir: PathBuf,
    sock: String,
    child: Child,
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

impl Sim {
    fn start(net: &Path) -> Sim {
        let n = SEQ.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("ibpm-topo-ibsim-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let sock = format!("ibpmtopo{}x{n}", std::process::id());
        let out = fs::File::create(dir.join("ibsim.out")).unwrap();
        let child = Command::new("ibsim")
            .args(["-s", "-n"])
            .arg(net)
            .env("IBSIM_SOCKNAME", &sock)
            .env_remove("LD_PRELOAD")
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .expect("ibsim must be installed (apt-get install ibsim-utils)");
        let mut sim = Sim { dir, sock, child };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let log = fs::read_to_string(sim.dir.join("ibsim.out")).unwrap_or_default();
            if log.contains("Network simulator ready") {
                break;
            }
            if let Ok(Some(st)) = sim.child.try_wait() {
                panic!("ibsim exited ({st}) on {}:\n{log}", net.display());
            }
            assert!(
                Instant::now() < deadline,
                "ibsim not ready after 20 s:\n{log}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        sim
    }

    /// Runs a umad2sim client to completion (bounded) and returns its stdout.
    fn run(&self, prog: &str, args: &[&str]) -> String {
        self.run_at(None, prog, args)
    }

    /// [`Sim::run`] with the client attached to node `host` (SIM_HOST; by
    /// default the file's first node).
    fn run_at(&self, host: Option<&str>, prog: &str, args: &[&str]) -> String {
        assert!(
            Path::new(UMAD2SIM).exists(),
            "{UMAD2SIM} missing (libumad2sim0)"
        );
        let out_path = self.dir.join(format!("{prog}.out"));
        let mut cmd = Command::new(prog);
        if let Some(h) = host {
            cmd.env("SIM_HOST", h);
        }
        let mut child = cmd
            .args(args)
            .env("LD_PRELOAD", UMAD2SIM)
            .env("IBSIM_SOCKNAME", &self.sock)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(fs::File::create(&out_path).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{prog} must be installed (infiniband-diags): {e}"));
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{prog} did not finish in 60 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.success(), "{prog} failed: {status}");
        fs::read_to_string(out_path).unwrap()
    }
}

/// What ibnetdiscover printed, read without our parser: per node GUID its
/// type, description, and per port (number -> (port GUID if printed, remote
/// node GUID, remote port)).
struct Seen {
    node_type: NodeType,
    description: String,
    ports: HashMap<u8, (Option<u64>, u64, u8)>,
}

fn hex_after(s: &str, prefix: &str) -> Option<u64> {
    let p = s.find(prefix)? + prefix.len();
    let h: String = s[p..]
        .chars()
        .take_while(|c| c.is_ascii_hexdigit())
        .collect();
    u64::from_str_radix(&h, 16).ok()
}

fn read_ibnetdiscover(text: &str) -> HashMap<u64, Seen> {
    let mut out = HashMap::new();
    let mut cur: Option<u64> = None;
    for line in text.lines() {
        if line.starts_with("Switch") || line.starts_with("Ca") {
            let guid = hex_after(line, "\"S-")
                .or_else(|| hex_after(line, "\"H-"))
                .expect("node name carries the GUID");
            let desc = line
                .split("# \"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            let t = if line.starts_with("Switch") {
                NodeType::Switch
            } else {
                NodeType::Ca
            };
            out.insert(
                guid,
                Seen {
                    node_type: t,
                    description: desc.to_string(),
                    ports: HashMap::new(),
                },
            );
            cur = Some(guid);
        } else if line.starts_with('[') {
            let g = cur.expect("port line inside a record");
            let num: u8 = line[1..line.find(']').unwrap()].parse().unwrap();
            let local = line[line.find(']').unwrap() + 1..]
                .strip_prefix('(')
                .map(|r| u64::from_str_radix(&r[..r.find(')').unwrap()], 16).unwrap());
            let remote = hex_after(line, "\"S-")
                .or_else(|| hex_after(line, "\"H-"))
                .unwrap();
            let after = &line[line.find("\"[").unwrap() + 2..];
            let rport: u8 = after[..after.find(']').unwrap()].parse().unwrap();
            out.get_mut(&g)
                .unwrap()
                .ports
                .insert(num, (local, remote, rport));
        } else if line.trim().is_empty() {
            cur = None;
        }
    }
    out
}

fn compare(name: &str, ours: &Fabric, text: &str) {
    let seen = read_ibnetdiscover(text);
    let reachable = ours
        .nodes
        .iter()
        .filter(|n| n.ports.iter().any(|p| p.remote().is_some()));
    assert_eq!(seen.len(), reachable.count(), "{name}: node count\n{text}");
    for (guid, s) in &seen {
        let n = ours
            .node(Guid(*guid))
            .unwrap_or_else(|| panic!("{name}: ibsim has node {guid:#x}, parser does not"));
        assert_eq!(n.id.node_type, s.node_type, "{name}: type of {guid:#x}");
        assert_eq!(
            &*n.id.description, s.description,
            "{name}: description of {guid:#x}"
        );
        let cabled = n.ports.iter().filter(|p| p.remote().is_some()).count();
        assert_eq!(cabled, s.ports.len(), "{name}: cabled ports of {guid:#x}");
        for (num, (port_guid, rguid, rport)) in &s.ports {
            let p = n
                .port(*num)
                .unwrap_or_else(|| panic!("{name}: port {num} of {guid:#x}"));
            if let Some(pg) = port_guid {
                assert_eq!(p.guid, Guid(*pg), "{name}: port GUID {guid:#x}[{num}]");
            }
            assert_eq!(
                p.remote(),
                Some((Guid(*rguid), *rport)),
                "{name}: link {guid:#x}[{num}]"
            );
        }
    }
    // The same output read by our parser (it carries explicit GUID lines and
    // ibnetdiscover's width/speed comments) describes the same fabric.
    let back = topology::parse(text).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
    for n in &back.nodes {
        let o = ours.node(n.id.guid).unwrap();
        assert_eq!(
            (n.id.node_type, &n.id.description, n.id.sys_guid),
            (o.id.node_type, &o.id.description, o.id.sys_guid),
            "{name}"
        );
        for p in n.ports.iter().filter(|p| p.remote().is_some()) {
            let op = o.port(p.num).unwrap();
            assert_eq!(
                (p.guid, p.remote(), &p.width, &p.speed),
                (op.guid, op.remote(), &op.width, &op.speed),
                "{name}: {}[{}]",
                n.id.description,
                p.num
            );
        }
    }
}

#[test]
fn parser_agrees_with_ibsim_on_examples_and_default_fabric() {
    let mut files: Vec<PathBuf> = fs::read_dir(EXAMPLES)
        .expect("ibsim-utils examples must be installed")
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("net"))
        .collect();
    files.sort();
    assert!(files.len() >= 5);
    files.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("config/default-fabric.net"));
    for f in &files {
        let ours = topology::load(f).unwrap_or_else(|e| panic!("{e}"));
        let sim = Sim::start(f);
        let text = sim.run("ibnetdiscover", &[]);
        compare(&f.display().to_string(), &ours, &text);
    }
}

/// A file of several planes (the generators' `--planes`, `# subnetprefix`
/// lines included) runs under ibsim, and what ibnetdiscover finds from a
/// host of a plane is that plane as the parser makes it: its own nodes
/// and, of an adapter with a port on each plane, that plane's port alone.
#[test]
fn ibsim_sees_one_plane_from_a_host_on_it() {
    use ibpm_agentx::sim::{SimFabric, SimOptions};
    let dir = std::env::temp_dir().join(format!("ibpm-planes-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/gen-fat-tree");
    // Per file: the generator's arguments, and the host a client attaches
    // to on each plane (umad2sim attaches to a node's first port, the
    // first node's by default).
    type Case<'a> = (&'a str, &'a [&'a str], &'a [Option<&'a str>]);
    let cases: [Case; 2] = [
        (
            "shared",
            &["--planes", "2", "--multi-plane-hcas", "2", "1", "2"],
            &[None],
        ),
        (
            "apart",
            &["--planes", "2", "2", "1", "2", "1"],
            &[Some("P0_H1_0"), Some("P1_H0_1")],
        ),
    ];
    for (name, args, hosts) in cases {
        let out = Command::new(&script).args(args).output().unwrap();
        assert!(out.status.success());
        let net = dir.join(format!("{name}.net"));
        fs::write(&net, &out.stdout).unwrap();
        let planes = SimFabric::from_topology(
            topology::load_topology(&net).unwrap(),
            SimOptions::default(),
        );
        assert_eq!(planes.plane_count(), 2);
        let sim = Sim::start(&net);
        for (i, host) in hosts.iter().enumerate() {
            let text = sim.run_at(*host, "ibnetdiscover", &[]);
            compare(&format!("{name} plane {i}"), &planes.plane_fabric(i), &text);
        }
    }
    let _ = fs::remove_dir_all(&dir);
}
