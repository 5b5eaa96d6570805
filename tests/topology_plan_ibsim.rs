//! The fabric against its plan, on a real (simulated) fabric: ibsim running
//! a small fat tree, LIDs from `opensm -o`, the `ibpm-agentx` binary under
//! umad2sim with its baseline (the fabric as first found, kept beside its
//! state file) as the plan, a private snmpd as its AgentX master with
//! `trap2sink` to a private snmptrapd. Through ibsim's console two hosts'
//! cables are swapped on their leaf (`Unlink`, `Link`); after the next
//! rediscovery the status page in headless Chromium, `/api/topology/diff`,
//! pmPlanDiffTable through snmpd and a pmLinkNotAsPlanned trap each name
//! the miswired ports with both peers. Put back (`Unlink`, `Link`), the
//! verdicts clear after the (short) recovery window with pmLinkAsPlanned.

mod common;
mod ibsim;

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{ChildGuard, PrivateSnmpd, PrivateSnmptrapd, free_tcp_port, traps_about, v2_traps};
use ibpm_agentx::metrics::plan_diff::{self, DiffReport};
use ibsim::{FatTree, named};

fn wait_for(limit: Duration, what: &str, ok: impl FnMut() -> bool) {
    common::wait_until(what, limit, Duration::from_millis(200), ok);
}

fn diff(port: u16) -> DiffReport {
    let (status, head, body) = common::http::get(port, "/api/topology/diff", "");
    assert_eq!(status, 200, "{head}");
    plan_diff::parse(&body).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&body)))
}

/// The status page as headless Chromium renders it (its DOM), the browser
/// stopped by PID after 90 s at most.
fn chromium_dom(dir: &Path, url: &str) -> String {
    let out = dir.join("dom.html");
    let child = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .args(["--dump-dom", url])
        .stdin(Stdio::null())
        .stdout(fs::File::create(&out).unwrap())
        .stderr(fs::File::create(dir.join("chromium.log")).unwrap())
        .spawn()
        .expect("run chromium (scripts/install-deps installs it)");
    let mut guard = ChildGuard::new("chromium", child);
    common::wait_until(
        "chromium to finish",
        Duration::from_secs(90),
        Duration::from_millis(100),
        || !guard.running(),
    );
    let status = guard.stop().expect("an exit status");
    assert!(status.success(), "chromium: {status}");
    fs::read_to_string(&out).unwrap_or_default()
}

/// pmPlanDiffTable's pmPlanDiffText column, walked through snmpd.
const PLAN_TEXT: &str = "1.3.6.1.3.117.1.25.1.14";

#[test]
fn a_swap_is_named_in_every_face_and_clears_when_put_back() {
    assert!(
        PrivateSnmpd::available(),
        "snmpd and the net-snmp tools are needed: run scripts/install-deps"
    );
    let FatTree {
        dir,
        mut sim,
        nodes: ib,
    } = FatTree::start(2, 2, 2, 0);
    let l0 = named(&ib, "L0").clone();
    // L0's two host ports and their hosts.
    let hosts: Vec<(u8, u64, u8)> = l0
        .ports
        .iter()
        .filter(|(_, (peer, _, _, _))| ib[peer].desc.starts_with('H'))
        .map(|(&p, &(peer, pp, _, _))| (p, peer, pp))
        .collect();
    assert!(hosts.len() >= 2, "{hosts:?}");
    let (pa, ha, hpa) = hosts[0];
    let (pb, hb, hpb) = hosts[1];
    let (name_a, name_b) = (ib[&ha].desc.clone(), ib[&hb].desc.clone());

    let trapd = PrivateSnmptrapd::start().expect("snmptrapd");
    let snmpd = PrivateSnmpd::start_with_conf(&format!("trap2sink {} public\n", trapd.sink()))
        .expect("a private snmpd");
    let http = free_tcp_port();
    let state = dir.path().join("state");
    let (mut c, agent_log) = sim.agent_command(&format!(
        "[agentx]\nsocket = \"{}\"\nreconnect_max = 1\n\
         [fabric]\nbackend = \"umad\"\nsweep_interval = 1\nunreachable_after = 2\n\
         rediscover_interval = 2\nportinfo_interval = 1\nstate_file = \"{}\"\n\
         [health]\nrecovery = 4\n\
         [metrics]\nlisten = \"127.0.0.1:{http}\"\n",
        snmpd.agentx_addr(),
        state.display()
    ));
    let mut agent = ChildGuard::new("ibpm-agentx", c.spawn().expect("start ibpm-agentx"));
    let log = || fs::read_to_string(&agent_log).unwrap_or_default();
    wait_for(Duration::from_secs(30), "the first comparison", || {
        log().contains("first sweep done") && diff(http).source.is_some()
    });
    let d = diff(http);
    assert_eq!(d.source.as_deref(), Some("baseline"));
    assert!(d.as_planned, "{d:#?}");
    wait_for(Duration::from_secs(10), "the baseline file", || {
        fs::metadata(format!("{}.plan", state.display())).is_ok()
    });

    // The swap: each host's cable goes to the other's port on L0.
    sim.console(&format!("Unlink \"L0\"[{pa}]"));
    sim.console(&format!("Unlink \"L0\"[{pb}]"));
    sim.console(&format!("Link \"L0\"[{pa}] \"{name_b}\"[{hpb}]"));
    sim.console(&format!("Link \"L0\"[{pb}] \"{name_a}\"[{hpa}]"));
    sim.run_opensm();
    fn miswired_at(d: &DiffReport, guid: u64, port: u8) -> Option<&plan_diff::DiffRow> {
        d.mismatches.iter().find(|m| {
            m.kind == "miswired" && m.node_guid == format!("0x{guid:016x}") && m.port == port
        })
    }
    wait_for(Duration::from_secs(30), "the swap seen miswired", || {
        let d = diff(http);
        miswired_at(&d, l0.guid, pa).is_some() && miswired_at(&d, l0.guid, pb).is_some()
    });
    let d = diff(http);
    let m = miswired_at(&d, l0.guid, pa).unwrap();
    let planned = m.planned.as_ref().expect("the planned peer");
    let found = m.found.as_ref().expect("the peer found");
    assert_eq!(planned.guid, Some(format!("0x{ha:016x}")));
    assert_eq!(planned.port, hpa);
    assert_eq!(found.guid, Some(format!("0x{hb:016x}")));
    assert_eq!(found.port, hpb);
    let sentence = format!("L0/{pa} should go to {name_a}/{hpa}; it goes to {name_b}/{hpb}");
    assert_eq!(m.text, sentence);
    // The hosts' ends too: each is cabled to another port than planned.
    assert!(miswired_at(&d, ha, hpa).is_some(), "{d:#?}");
    assert!(miswired_at(&d, hb, hpb).is_some(), "{d:#?}");

    // The page, in a browser.
    let dom = chromium_dom(dir.path(), &format!("http://127.0.0.1:{http}/"));
    assert!(dom.contains("Not as planned"), "{dom}");
    assert!(dom.contains(&sentence), "{dom}");

    // The MIB through snmpd.
    let walked = common::SnmpTool::new("snmpbulkwalk")
        .args([
            "-v2c",
            "-c",
            "public",
            "-On",
            "-Oqv",
            &snmpd.target(),
            PLAN_TEXT,
        ])
        .timeout(Duration::from_secs(30))
        .run();
    let walked = String::from_utf8_lossy(&walked.stdout).to_string();
    assert!(walked.contains(&sentence), "{walked}");

    // The trap at snmptrapd, from L0's port, naming both peers.
    wait_for(Duration::from_secs(10), "pmLinkNotAsPlanned", || {
        !traps_about(
            v2_traps(&trapd.log(), "pmLinkNotAsPlanned"),
            l0.guid,
            Some(pa),
        )
        .is_empty()
    });
    let t = traps_about(
        v2_traps(&trapd.log(), "pmLinkNotAsPlanned"),
        l0.guid,
        Some(pa),
    );
    let t = &t[0];
    assert!(
        t.contains("pmNotifyPlanKind.0 = INTEGER: miswired(2)"),
        "{t}"
    );
    assert!(
        t.contains(&format!(
            "pmNotifyPlannedNodeGuid.0 = STRING: {}",
            common::guid_hint(ha)
        )),
        "{t}"
    );
    assert!(
        t.contains(&format!(
            "pmNotifyPeerNodeGuid.0 = STRING: {}",
            common::guid_hint(hb)
        )),
        "{t}"
    );
    assert!(t.contains(&sentence), "{t}");

    // Put back (ibsim's ReLink would restore the swapped peers, the
    // ports' last): the verdicts clear after the recovery window.
    sim.console(&format!("Unlink \"L0\"[{pa}]"));
    sim.console(&format!("Unlink \"L0\"[{pb}]"));
    sim.console(&format!("Link \"L0\"[{pa}] \"{name_a}\"[{hpa}]"));
    sim.console(&format!("Link \"L0\"[{pb}] \"{name_b}\"[{hpb}]"));
    sim.run_opensm();
    let back = common::poll(Duration::from_secs(40), Duration::from_millis(200), || {
        diff(http).as_planned.then_some(())
    });
    assert!(back.is_some(), "not as planned again: {:#?}", diff(http));
    wait_for(Duration::from_secs(10), "pmLinkAsPlanned", || {
        !traps_about(v2_traps(&trapd.log(), "pmLinkAsPlanned"), l0.guid, Some(pa)).is_empty()
    });
    assert!(agent.running(), "agent exited:\n{}", log());
    assert!(log().contains("not as planned: miswired"), "{}", log());
    agent.stop();
}
