//! Link widths and speeds read from ibsim's PortInfo by directed-route
//! discovery (under umad2sim): the supported and enabled sets of each
//! port, as smpquery (rdma-core) prints them, and what each link should
//! run at. ibsim trains every link at the best width and speed both ends
//! enable (its `w=`/`s=` options set the enabled sets), so no link of it
//! runs below what both ends enable: every linked port is normal, where
//! iblinkinfo, which compares the supported sets alone, says "Could be
//! 12X" of every 4x link.

mod ibsim;

use std::collections::BTreeMap;
use std::fs;

use ibsim::{IbSim, lines_of};

/// An HCA first (where umad2sim clients attach), a switch whose links
/// were set to 1x (`w=1` on the switch end, 1x or 4x enabled on the
/// HCA's) and 4x DDR (`w=3 s=3`: 1x or 4x, SDR or DDR, on both ends).
const NET: &str = "Hca 1 \"H0\"\n[1] \"S1\"[4]\n\n\
                   Hca 1 \"H1\"\n[1] \"S1\"[1] w=3\n\n\
                   Hca 1 \"H2\"\n[1] \"S1\"[2] w=3 s=3\n\n\
                   Switch 4 \"S1\"\n[1] \"H1\"[1] w=1\n[2] \"H2\"[1] w=3 s=3\n[4] \"H0\"[1]\n";

/// smpquery's `1X or 4X` and `2.5 Gbps or 5.0 Gbps or 10.0 Gbps` as the
/// agent's sets (`1x,4x`, `SDR,DDR,QDR`).
fn from_smpquery(v: &str) -> String {
    v.split(" or ")
        .map(|t| match t.trim() {
            "2.5 Gbps" => "SDR".to_string(),
            "5.0 Gbps" => "DDR".to_string(),
            "10.0 Gbps" => "QDR".to_string(),
            w => w.to_ascii_lowercase(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// `Name:......value` lines of smpquery.
fn fields(out: &str) -> BTreeMap<String, String> {
    out.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            Some((
                k.trim().to_string(),
                v.trim_start_matches('.').trim().to_string(),
            ))
        })
        .collect()
}

#[test]
fn ibsims_port_info_sets_are_read_and_its_links_run_as_enabled() {
    let dir = tempfile::Builder::new()
        .prefix("ibpm-link-")
        .tempdir()
        .expect("temp dir");
    let net = dir.path().join("link.net");
    fs::write(&net, NET).unwrap();
    let sim = IbSim::start(&net);
    let r = sim.probe(&["--no-counters"], &[]);
    assert!(
        r.status.success(),
        "probe failed: {}\n{}",
        r.stdout,
        r.stderr
    );
    let ports = lines_of(&r.stdout, "port");
    let nodes = lines_of(&r.stdout, "node");
    let guid_of = |desc: &str| {
        nodes
            .iter()
            .find(|n| n["desc"] == desc)
            .unwrap_or_else(|| panic!("no node {desc}"))["node"]
            .clone()
    };
    let port = |desc: &str, num: &str| {
        let g = guid_of(desc);
        ports
            .iter()
            .find(|p| p["port"] == g && p["num"] == num)
            .unwrap_or_else(|| panic!("no port {desc}[{num}]: {}", r.stdout))
            .clone()
    };
    // (node, port, width, speed, width enabled, speed enabled)
    for (desc, num, w, s, we, se) in [
        ("S1", "1", "1x", "SDR", "1x", "SDR"),
        ("H1", "1", "1x", "SDR", "1x,4x", "SDR"),
        ("S1", "2", "4x", "DDR", "1x,4x", "SDR,DDR"),
        ("H2", "1", "4x", "DDR", "1x,4x", "SDR,DDR"),
        ("S1", "4", "4x", "SDR", "4x", "SDR"),
    ] {
        let p = port(desc, num);
        let got = [
            p["width"].as_str(),
            p["speed"].as_str(),
            p["width_enabled"].as_str(),
            p["speed_enabled"].as_str(),
            p["width_supported"].as_str(),
            p["speed_supported"].as_str(),
            p["width_expected"].as_str(),
            p["speed_expected"].as_str(),
            p["degraded"].as_str(),
        ];
        // ibsim supports every width and SDR to QDR on every port.
        let want = [
            w,
            s,
            we,
            se,
            "1x,2x,4x,8x,12x",
            "SDR,DDR,QDR",
            w,
            s,
            "Normal",
        ];
        assert_eq!(got, want, "{desc}[{num}]");
    }

    // The local port's sets as smpquery (rdma-core) prints them.
    let q = sim.tool("smpquery", &["-D", "portinfo", "0", "1"]);
    assert!(q.status.success(), "smpquery: {}", q.stderr);
    let f = fields(&q.stdout);
    let h0 = port("H0", "1");
    for (ours, theirs) in [
        ("width_supported", "LinkWidthSupported"),
        ("width_enabled", "LinkWidthEnabled"),
        ("speed_supported", "LinkSpeedSupported"),
        ("speed_enabled", "LinkSpeedEnabled"),
    ] {
        let v = f
            .get(theirs)
            .unwrap_or_else(|| panic!("{theirs} in {}", q.stdout));
        // smpquery lists widths in bit order (2x last): compare as sets.
        let set = |s: &str| {
            let mut v: Vec<String> = s.split(',').map(str::to_string).collect();
            v.sort();
            v
        };
        assert_eq!(set(&h0[ours]), set(&from_smpquery(v)), "{theirs}: {v}");
    }
    eprintln!("smpquery portinfo of H0[1]:\n{}", q.stdout);
}

/// FDR10 is not in PortInfo (the link says QDR there): discovery reads it
/// from Mellanox ExtendedPortInfo, as ibnetdiscover does, on the devices
/// that have it (here SwitchX's DeviceID, which ibsim gives every node
/// after `devid=`).
#[test]
fn fdr10_is_read_from_mellanox_extended_port_info() {
    let net = "devid=0xc738\n\
               Hca 1 \"H0\"\n[1] \"S1\"[1] # lid 0 4xFDR10\n\n\
               Hca 1 \"H1\"\n[1] \"S1\"[2]\n\n\
               Switch 4 \"S1\"\n[1] \"H0\"[1] # \"H0\" lid 0 4xFDR10\n[2] \"H1\"[1]\n";
    let dir = tempfile::Builder::new()
        .prefix("ibpm-fdr10-")
        .tempdir()
        .expect("temp dir");
    let path = dir.path().join("fdr10.net");
    fs::write(&path, net).unwrap();
    let sim = IbSim::start(&path);
    let r = sim.probe(&["--no-counters"], &[]);
    assert!(
        r.status.success(),
        "probe failed: {}\n{}",
        r.stdout,
        r.stderr
    );
    let ports = lines_of(&r.stdout, "port");
    let nodes = lines_of(&r.stdout, "node");
    let s1 = nodes.iter().find(|n| n["desc"] == "S1").unwrap()["node"].clone();
    let p = |num: &str| {
        ports
            .iter()
            .find(|p| p["port"] == s1 && p["num"] == num)
            .unwrap()
            .clone()
    };
    let fdr10 = p("1");
    assert_eq!(
        [
            fdr10["speed"].as_str(),
            fdr10["speed_supported"].as_str(),
            fdr10["degraded"].as_str()
        ],
        ["FDR10", "SDR,DDR,QDR,FDR10", "Normal"],
        "{}",
        r.stdout
    );
    // The other link runs SDR (ibsim's default): no ExtendedPortInfo read.
    let sdr = p("2");
    assert_eq!(
        [sdr["speed"].as_str(), sdr["speed_supported"].as_str()],
        ["SDR", "SDR,DDR,QDR"]
    );
    // What ibnetdiscover prints for the same link.
    let ib = sim.tool("ibnetdiscover", &[]);
    assert!(ib.status.success(), "ibnetdiscover: {}", ib.stderr);
    assert!(ib.stdout.contains("4xFDR10"), "{}", ib.stdout);
}
