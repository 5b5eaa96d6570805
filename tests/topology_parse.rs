//! Topology parser: GUID assignment as ibsim does it, fields, errors with
//! line numbers, and no panic on mangled input.

use std::path::Path;

use ibpm_agentx::ib::topology::{self, TopologyError};
use ibpm_agentx::ib::{Fabric, Guid, NodeType};

const EXAMPLES: &str = "/usr/share/doc/ibsim-utils/net-examples";

fn node<'a>(f: &'a Fabric, desc: &str) -> &'a ibpm_agentx::ib::Node {
    f.nodes
        .iter()
        .find(|n| &*n.id.description == desc)
        .unwrap_or_else(|| panic!("no node {desc}"))
}

#[test]
fn guids_match_what_ibsim_assigned() {
    // GUIDs ibsim 0.10 gave this file, read back with ibnetdiscover
    // (tests/fixtures/pm/README.md): HCAs from 0x100000 taking ports+1 GUIDs
    // each, switches from 0x200000 one each.
    let f = topology::load(&Path::new(EXAMPLES).join("net.2sw2path4hca")).unwrap();
    assert_eq!(node(&f, "Switch1").id.guid, Guid(0x200000));
    assert_eq!(node(&f, "Switch2").id.guid, Guid(0x200001));
    assert_eq!(node(&f, "Hca1").id.guid, Guid(0x100000));
    assert_eq!(node(&f, "Hca2").id.guid, Guid(0x100003));
    assert_eq!(node(&f, "Hca3").id.guid, Guid(0x100006));
    assert_eq!(node(&f, "Hca4").id.guid, Guid(0x100009));
    let h4 = node(&f, "Hca4");
    assert_eq!(h4.port(1).unwrap().guid, Guid(0x10000a));
    assert_eq!(h4.port(2).unwrap().guid, Guid(0x10000b));
    assert_eq!(h4.port(1).unwrap().remote(), Some((Guid(0x200001), 2)));
    assert_eq!(h4.port(2).unwrap().remote(), None);
    assert_eq!(h4.id.sys_guid, h4.id.guid);
    let s1 = node(&f, "Switch1");
    assert_eq!(s1.id.node_type, NodeType::Switch);
    assert_eq!(s1.id.num_ports, 8);
    assert_eq!(s1.ports.len(), 8);
    assert!(s1.ports.iter().all(|p| p.guid == s1.id.guid));
    assert_eq!(s1.port(3).unwrap().remote(), Some((Guid(0x200001), 3)));
    assert_eq!(s1.port(3).unwrap().width.map(|w| w.name()), Some("4x"));
    assert_eq!(s1.port(3).unwrap().speed.map(|s| s.name()), Some("SDR"));
    assert_eq!(s1.port(4).unwrap().width, None);
    assert!(f.nodes.iter().all(|n| n.id.lid == 0));
    // Sorted by GUID.
    assert!(f.nodes.windows(2).all(|w| w[0].id.guid < w[1].id.guid));
}

#[test]
fn all_examples_parse_and_links_are_symmetric() {
    let mut n = 0;
    for e in std::fs::read_dir(EXAMPLES).expect("ibsim-utils examples installed") {
        let p = e.unwrap().path();
        if !p.file_name().unwrap().to_string_lossy().starts_with("net") {
            continue;
        }
        let f = topology::load(&p).unwrap_or_else(|e| panic!("{e}"));
        assert!(!f.nodes.is_empty());
        for node in &f.nodes {
            for port in &node.ports {
                if let Some((rg, rp)) = port.remote() {
                    let back = f.node(rg).unwrap().port(rp).unwrap();
                    assert_eq!(back.remote(), Some((node.id.guid, port.num)));
                }
            }
        }
        n += 1;
    }
    assert!(n >= 5);
}

const IBNETDISCOVER_TEXT: &str = r#"
vendid=0x2c9
devid=0x5a5a
sysimgguid=0x8f10400411a0b
switchguid=0x8f10400411a08(8f10400411a08)
Switch	24 "S-0008f10400411a08"		# "ISR9024 Voltaire" base port 0 lid 6 lmc 0
[1]	"H-0008f10403960558"[2](8f1040396055a) 		# "MT23108 InfiniHost Mellanox Technologies" lid 2 4xDDR
[3]	"H-0002c9000101d150"[1](2c9000101d151) 		# "mtlab1" lid 7 1xSDR

caguid=0x8f10403960558
Ca	2 "H-0008f10403960558"		# "MT23108 InfiniHost Mellanox Technologies"
[2](8f1040396055a) 	"S-0008f10400411a08"[1]		# lid 2 lmc 0 "ISR9024 Voltaire" lid 6 4xDDR

caguid=0x2c9000101d150
Ca	2 "H-0002c9000101d150"		# "mtlab1"
[1](2c9000101d151) 	"S-0008f10400411a08"[3]		# lid 7 lmc 0 "ISR9024 Voltaire" lid 6 1xSDR
"#;

#[test]
fn ibnetdiscover_output_with_guid_lines() {
    let f = topology::parse(IBNETDISCOVER_TEXT).unwrap();
    let sw = f.node(Guid(0x8f10400411a08)).unwrap();
    assert_eq!(&*sw.id.description, "ISR9024 Voltaire");
    assert_eq!(sw.id.sys_guid, Guid(0x8f10400411a0b));
    assert_eq!(sw.id.lid, 6);
    assert_eq!(sw.port(1).unwrap().lid, 6);
    let ca = f.node(Guid(0x8f10403960558)).unwrap();
    assert_eq!(ca.id.node_type, NodeType::Ca);
    assert_eq!(
        ca.id.sys_guid, ca.id.guid,
        "sysimgguid applies to one node only"
    );
    let p2 = ca.port(2).unwrap();
    assert_eq!(p2.guid, Guid(0x8f1040396055a));
    assert_eq!(p2.lid, 2);
    assert_eq!(p2.remote(), Some((sw.id.guid, 1)));
    assert_eq!(
        (p2.width.map(|w| w.name()), p2.speed.map(|s| s.name())),
        (Some("4x"), Some("DDR"))
    );
    assert_eq!(ca.port(1).unwrap().lid, 0);
    assert_eq!(ca.id.lid, 0, "node LID is port 1's");
    let lab = f.node(Guid(0x2c9000101d150)).unwrap();
    assert_eq!(lab.id.lid, 7);
    assert_eq!(lab.port(1).unwrap().width.map(|w| w.name()), Some("1x"));
    assert_eq!(sw.port(3).unwrap().speed.map(|s| s.name()), Some("SDR"));
}

#[test]
fn relative_guid_base_and_options() {
    let text = "caguid=0x5000\ncaguid+0x10\nCa 1 \"a\"\n[1] \"s\"[2] w=8 s=4\n\nswitchguid=7\nSwitch 4 \"s\" # plain text lid 3\n[2] \"a\"[1] w=8 s=7\n";
    let f = topology::parse(text).unwrap();
    let a = f.node(Guid(0x5010)).unwrap();
    assert_eq!(a.port(1).unwrap().guid, Guid(0x5011));
    assert_eq!(a.port(1).unwrap().width.map(|w| w.name()), Some("12x"));
    assert_eq!(a.port(1).unwrap().speed.map(|s| s.name()), Some("QDR"));
    let s = f.node(Guid(7)).unwrap();
    assert_eq!(&*s.id.description, "plain text");
    assert_eq!(s.id.lid, 3);
}

fn fails(text: &str) -> TopologyError {
    match topology::parse(text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e,
    }
}

#[test]
fn errors_name_the_line() {
    let cases: &[(&str, usize, &str)] = &[
        (
            "Switch 4 \"a\"\n[1] \"b\"[1]\n\nfoo=1\n",
            4,
            "unknown keyword",
        ),
        ("Switch 4 \"a\"\n[x] \"b\"[1]\n", 2, "bad port number"),
        ("Switch 4 \"a\"\n[5] \"b\"[1]\n", 2, "beyond"),
        ("Switch 4 \"a\"\n[0] \"b\"[1]\n", 2, "beyond"),
        ("Switch 4 \"a\"\n[1] \"b\"[1]\n", 2, "undefined node"),
        (
            "Switch 4 \"a\"\n\nSwitch 2 \"a\"\n",
            3,
            "duplicate node name",
        ),
        ("Switch 4 \"a\n", 1, "malformed quotes"),
        ("Switch 4 \"a\" # \"desc\n", 1, "malformed quotes"),
        ("Switch 4 \"a\"\n[1] \"b[1]\n", 2, "malformed quotes"),
        (
            "Switch 4 \"a\"\n[1] \"b\"[2]\n\nSwitch 4 \"b\"\n[2] \"c\"[1]\n\nCa 1 \"c\"\n[1] \"b\"[2]\n",
            2,
            "inconsistent link",
        ),
        (
            "Switch 4 \"a\"\n[1] \"b\"[1]\n\nCa 1 \"b\"\n",
            2,
            "not listed",
        ),
        (
            "Switch 4 \"a\"\n[1] \"b\"[3]\n\nCa 1 \"b\"\n[1] \"a\"[1]\n",
            2,
            "beyond",
        ),
        ("Switch 4 \"a\"\n[1] \"a\"[1]\n", 2, "itself"),
        ("Switch \"a\"\n", 1, "port count"),
        ("Switch 300 \"a\"\n", 1, "port count"),
        (
            "Ca 2 \"a\"\n[1] \"s\"[1]\n[1] \"s\"[2]\n",
            3,
            "listed twice",
        ),
        ("[1] \"s\"[1]\n", 1, "outside a node record"),
        ("Switch 2 \"a\"\n[1] \"b\"[0]\n", 2, "remote port"),
        ("switchguid=zz\n", 1, "bad GUID"),
        (
            "Ca 1 \"a\"\n\nswitchguid=0x100000\nSwitch 1 \"b\"\n",
            4,
            "already used",
        ),
        ("include \"x\"\n", 1, "not supported"),
        ("Switch 2 \"a\"\n[1] \"b\"[1] w=0\n", 2, "link width"),
    ];
    for (text, line, msg) in cases {
        let e = fails(text);
        assert_eq!(e.line, *line, "{text:?}: {e}");
        assert!(e.reason.contains(msg), "{text:?}: {e}");
        let shown = e.to_string();
        assert!(
            shown.starts_with(&format!("topology <text>:{line}: ")),
            "{shown}"
        );
    }
}

#[test]
fn load_errors_carry_the_path() {
    let dir = std::env::temp_dir().join(format!("ibpm-topo-parse-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("bad.net");
    std::fs::write(&p, "# x\n\nSwitch 4 \"a\"\n[9] \"b\"[1]\n").unwrap();
    let e = topology::load(&p).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "topology {}:4: port 9 is beyond \"a\"'s ports 1..4",
            p.display()
        )
    );
    let e = topology::load(&dir.join("missing.net")).unwrap_err();
    assert!(e.to_string().contains("missing.net"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn default_fabric_shape() {
    let f = topology::default_fabric();
    let switches: Vec<_> = f
        .nodes
        .iter()
        .filter(|n| n.id.node_type == NodeType::Switch)
        .collect();
    let cas: Vec<_> = f
        .nodes
        .iter()
        .filter(|n| n.id.node_type == NodeType::Ca)
        .collect();
    assert_eq!(switches.len(), 6);
    assert_eq!(cas.len(), 12);
    assert!(cas.iter().any(|c| c.id.num_ports == 1));
    let dual: Vec<_> = cas.iter().filter(|c| c.id.num_ports == 2).collect();
    assert!(!dual.is_empty());
    for c in dual {
        let a = c.port(1).unwrap().remote().unwrap().0;
        let b = c.port(2).unwrap().remote().unwrap().0;
        assert_ne!(a, b, "{}: both ports on one leaf", c.id.description);
    }
    // Every CA port is cabled.
    assert!(
        cas.iter()
            .all(|c| c.ports.iter().all(|p| p.remote().is_some()))
    );
}

/// splitmix64
fn next(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[test]
fn mutations_never_panic() {
    let mut inputs = vec![
        topology::DEFAULT_FABRIC_TEXT.to_string(),
        IBNETDISCOVER_TEXT.to_string(),
    ];
    for e in std::fs::read_dir(EXAMPLES).expect("ibsim-utils examples installed") {
        inputs.push(std::fs::read_to_string(e.unwrap().path()).unwrap());
    }
    let alphabet = b"\"[]#=+()@ \t\n0123456789xabcdefSwitchCa-\xc3\xa9";
    let mut seed = 7;
    let mut ok = 0;
    for base in &inputs {
        for _ in 0..400 {
            let mut b = base.as_bytes().to_vec();
            for _ in 0..(1 + next(&mut seed) % 6) {
                if b.is_empty() {
                    break;
                }
                let at = (next(&mut seed) % b.len() as u64) as usize;
                match next(&mut seed) % 5 {
                    0 => {
                        b.remove(at);
                    }
                    1 => b.insert(
                        at,
                        alphabet[(next(&mut seed) % alphabet.len() as u64) as usize],
                    ),
                    2 => b[at] = alphabet[(next(&mut seed) % alphabet.len() as u64) as usize],
                    3 => b.truncate(at),
                    _ => {
                        let end = (at + 40).min(b.len());
                        let chunk = b[at..end].to_vec();
                        b.splice(at..at, chunk);
                    }
                }
            }
            let text = String::from_utf8_lossy(&b);
            if topology::parse(&text).is_ok() {
                ok += 1;
            }
        }
    }
    // Some mutations (in comments) leave a valid file.
    assert!(ok > 0);
}
