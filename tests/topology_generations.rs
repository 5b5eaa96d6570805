//! Topology files of every InfiniBand generation: speeds SDR to XDR and
//! widths 1x to 12x in ibnetdiscover's `lid N 2xNDR` comments and in
//! ibsim's `w=`/`e=` options, 129-port switches, split ports,
//! descriptions with ';' and ':', and tokens the parser does not know.

use std::path::Path;

use ibpm_agentx::ib::topology::{self, parse_with_warnings};
use ibpm_agentx::ib::{Fabric, LinkSpeed as S, LinkWidth as W, Node};

const FILE: &str = "tests/fixtures/topology/generations.net";

fn node<'a>(f: &'a Fabric, desc: &str) -> &'a Node {
    f.nodes
        .iter()
        .find(|n| &*n.id.description == desc)
        .unwrap_or_else(|| panic!("no node {desc}"))
}

/// (width, speed, rate in Mb/s) of `desc`'s port `port`.
fn link(f: &Fabric, desc: &str, port: u8) -> (Option<W>, Option<S>, Option<u64>) {
    let p = node(f, desc).port(port).expect("port");
    (p.width, p.speed, p.rate_mbps())
}

#[test]
fn every_generation_reads_as_ibnetdiscover_wrote_it() {
    let (f, warnings) = parse_with_warnings(&std::fs::read_to_string(FILE).unwrap()).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let q2 = node(&f, "MF0;gpu-sw-01:MQM9700/U1");
    assert_eq!(q2.id.num_ports, 129);
    assert_eq!(q2.ports.len(), 130, "ports 0..=129, port 0 enhanced");
    assert_eq!(q2.id.lid, 1);
    assert_eq!(q2.port(129).unwrap().remote(), None);
    let cx7 = node(&f, "gpu01 mlx5_0");
    assert_eq!(cx7.port(1).unwrap().remote(), Some((q2.id.guid, 1)));
    // Split ports at NDR200, one trained at 1x; the ISL at 2x NDR.
    let sw = "MF0;gpu-sw-01:MQM9700/U1";
    assert_eq!(link(&f, sw, 1), (Some(W::X2), Some(S::Ndr), Some(200_000)));
    assert_eq!(
        link(&f, "gpu01 mlx5_0", 1),
        (Some(W::X2), Some(S::Ndr), Some(200_000))
    );
    assert_eq!(link(&f, sw, 2), (Some(W::X1), Some(S::Ndr), Some(100_000)));
    assert_eq!(link(&f, sw, 65), (Some(W::X2), Some(S::Ndr), Some(200_000)));
    // EDR and a link that came up at DDR.
    let sib = "SwitchIB Mellanox Technologies";
    let sibs: Vec<&Node> = f
        .nodes
        .iter()
        .filter(|n| &*n.id.description == sib)
        .collect();
    assert_eq!(sibs.len(), 2);
    let p = |n: &Node, k: u8| {
        let p = n.port(k).unwrap();
        (p.width, p.speed, p.rate_mbps())
    };
    assert_eq!(p(sibs[0], 1), (Some(W::X4), Some(S::Edr), Some(100_000)));
    assert_eq!(p(sibs[0], 2), (Some(W::X4), Some(S::Ddr), Some(16_000)));
    // XDR from a comment and from ibsim's options.
    let xdr = "xdr01 ConnectX-8";
    assert_eq!(link(&f, xdr, 1), (Some(W::X4), Some(S::Xdr), Some(800_000)));
    assert_eq!(link(&f, xdr, 2), (Some(W::X4), Some(S::Xdr), Some(800_000)));
    // FDR10 and 12x QDR.
    assert_eq!(
        link(&f, "old01 ConnectX-3", 1),
        (Some(W::X4), Some(S::Fdr10), Some(40_000))
    );
    assert_eq!(
        link(&f, "qdr-12x", 1),
        (Some(W::X12), Some(S::Qdr), Some(96_000))
    );
    // The enabled sets the file states, as ibsim reads them (supported
    // is not in the file).
    let caps = node(&f, xdr).port(1).unwrap().caps;
    assert_eq!(caps.width_enabled.to_string(), "1x,4x");
    assert_eq!(
        caps.speed_enabled.to_string(),
        "SDR,DDR,QDR,FDR10,FDR,EDR,HDR,NDR,XDR"
    );
    assert!(!caps.width_supported.is_known() && !caps.speed_supported.is_known());
    let caps = node(&f, "gpu01 mlx5_0").port(1).unwrap().caps;
    assert_eq!(caps.width_enabled.to_string(), "2x");
}

#[test]
fn every_width_and_speed_token() {
    for (token, width, speed) in [
        ("1xSDR", W::X1, S::Sdr),
        ("4xDDR", W::X4, S::Ddr),
        ("12xQDR", W::X12, S::Qdr),
        ("4xFDR10", W::X4, S::Fdr10),
        ("4xFDR", W::X4, S::Fdr),
        ("8xEDR", W::X8, S::Edr),
        ("1xHDR", W::X1, S::Hdr),
        ("2xNDR", W::X2, S::Ndr),
        ("4xXDR", W::X4, S::Xdr),
        ("2XNDR", W::X2, S::Ndr),
    ] {
        let text = format!(
            "Switch 2 \"S\"\n[1] \"H\"[1] # \"h\" lid 2 {token}\n\n\
             Hca 1 \"H\"\n[1] \"S\"[1] # lid 2 lmc 0 \"s\" lid 1 {token}\n"
        );
        let (f, w) = parse_with_warnings(&text).unwrap();
        assert!(w.is_empty(), "{token}: {w:?}");
        let h = &node(&f, "H").ports[0];
        assert_eq!((h.width, h.speed), (Some(width), Some(speed)), "{token}");
    }
    // ibsim's options: e= takes rdma-core's aggregated extended speeds.
    for (opts, speed) in [
        ("e=8", S::Ndr),
        ("e=32", S::Xdr),
        ("e=15", S::Ndr),
        ("e=0", S::Sdr),
    ] {
        let text =
            format!("Switch 2 \"S\"\n[1] \"H\"[1] {opts}\n\nHca 1 \"H\"\n[1] \"S\"[1] {opts}\n");
        let f = topology::parse(&text).unwrap();
        assert_eq!(node(&f, "H").ports[0].speed, Some(speed), "{opts}");
    }
    let bad = "Switch 2 \"S\"\n[1] \"H\"[1] e=16\n\nHca 1 \"H\"\n[1] \"S\"[1]\n";
    let e = topology::parse(bad).unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.reason.contains("bad extended link speed 16"), "{e}");
}

/// A token the parser does not know leaves that link's width or speed
/// unknown, with one warning naming the file and the line; it is never
/// read as another value.
#[test]
fn unknown_tokens_are_unknown_with_one_warning_each() {
    let text = "Switch 4 \"S\"\n\
                [1] \"A\"[1] # \"a\" lid 2 4xZDR\n\
                [2] \"B\"[1] # \"b\" lid 3 3xNDR\n\
                [3] \"C\"[1] # \"c\" lid 4 ???\n\
                [4] \"D\"[1] # \"d\" lid 5 2xNDR\n\n\
                Hca 1 \"A\"\n[1] \"S\"[1] # lid 2 lmc 0 \"s\" lid 1 4xZDR\n\n\
                Hca 1 \"B\"\n[1] \"S\"[2]\n\n\
                Hca 1 \"C\"\n[1] \"S\"[3]\n\n\
                Hca 1 \"D\"\n[1] \"S\"[4] # lid 5 lmc 0 \"s\" lid 1 2xNDR\n";
    let (f, warnings) = parse_with_warnings(text).unwrap();
    let lines: Vec<usize> = warnings.iter().map(|w| w.line).collect();
    assert_eq!(lines, [2, 3, 4, 8], "{warnings:?}");
    assert!(
        warnings[0].reason.contains("unknown link speed 'ZDR'"),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[1].reason.contains("unknown link width '3x'"),
        "{}",
        warnings[1]
    );
    assert!(warnings[2].reason.contains("'???'"), "{}", warnings[2]);
    let p = |d: &str| {
        let p = &node(&f, d).ports[0];
        (p.width, p.speed, p.rate_mbps())
    };
    assert_eq!(p("A"), (Some(W::X4), None, None));
    // B's speed: NDR enabled on the switch end, SDR (the default) on the
    // adapter's, which lists no speed: SDR, as ibsim trains it.
    assert_eq!(p("B"), (None, Some(S::Sdr), None));
    assert_eq!(p("C"), (None, None, None));
    assert_eq!(p("D"), (Some(W::X2), Some(S::Ndr), Some(200_000)));
    // Loaded from a file, the warning names it.
    let dir = std::env::temp_dir().join(format!("ibpm-topo-gen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.net");
    std::fs::write(&path, text).unwrap();
    let f2 = topology::load(Path::new(&path)).unwrap();
    assert_eq!(f2, f);
    let shown = TopologyWarning(&warnings[0], &path).to_string();
    assert!(shown.contains("bad.net:2: unknown link speed"), "{shown}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// How `load` shows a warning: the error type with the file set.
struct TopologyWarning<'a>(&'a topology::TopologyError, &'a Path);

impl std::fmt::Display for TopologyWarning<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0.clone().in_file(self.1))
    }
}
