//! The DOCA telemetry diag backend against the stand-in library
//! (tests/doca-standin/standin.c) loaded through the same run-time path as
//! NVIDIA's: every output format and timestamp source decodes to the
//! stand-in's values; each missing requirement is one line; and through a
//! private snmpd the local ports' rows show the stand-in's bytes, packets
//! and discards, updating at the configured sample period.

mod common;

use std::time::{Duration, Instant};

use common::doca::{FakeHost, PF0_GUID, PF1_GUID, standin_library};
use common::{ChildGuard, PrivateSnmpd, SnmpTool};
use ibpm_agentx::config::Config;
use ibpm_agentx::doca::decode::{Layout, OutputFormat, TimestampSource};
use ibpm_agentx::doca::sys::{DiagConfig, Doca};
use ibpm_agentx::doca::{DATA_IDS, sampler};
use ibpm_agentx::ib::Guid;

/// The stand-in's step of data ID `id` (see standin.c).
fn step(id: u64) -> u64 {
    1000 * ((id >> 32) & 0xF) + if id >> 56 == 0x11 { 500 } else { 0 } + (id & 0xFF)
}

#[test]
fn every_output_format_and_timestamp_source_decodes_the_stand_ins_samples() {
    let doca = Doca::load(&[standin_library().display().to_string()]).expect("load the stand-in");
    assert_eq!(doca.devices().unwrap(), vec!["mlx5_0".to_string()]);
    let ids: Vec<u64> = [1u8, 2]
        .iter()
        .flat_map(|&p| DATA_IDS.iter().map(move |d| d.for_port(p)))
        .collect();
    for format in OutputFormat::ALL {
        for ts in [TimestampSource::Frc, TimestampSource::Rtc] {
            let cfg = DiagConfig {
                force_ownership: false,
                format,
                timestamps: ts,
                sample_period_ns: 2_000_000,
                // 1024 samples (2 s): none is dropped on a slow machine.
                log_max_num_samples: 10,
                max_num_data_ids: ids.len() as u32,
            };
            let mut started = doca.start_diag("mlx5_0", &cfg, &ids).expect("start");
            assert_eq!(started.applied, ids);
            assert!(started.rejected.is_empty());
            let layout = Layout::new(format, ts, ids.clone(), started.diag.sample_size())
                .expect("sample size fits the format");
            // 15 sample periods; one query takes what is there (asking
            // before would take the first samples away from this one).
            std::thread::sleep(Duration::from_millis(30));
            let mut buf = vec![0u8; layout.sample_size * 1024];
            let (n, _) = started.diag.query(&mut buf).expect("query");
            assert!(n >= 5, "{format:?} {ts:?}: {n} samples after 30 ms at 2 ms");
            let samples = layout.decode(&buf, n).expect("decode");
            let mut last_ns = 0;
            for (k, s) in samples.iter().enumerate() {
                assert_eq!(s.sample_id as usize, k, "consecutive sample IDs");
                assert!(s.earliest_ns > last_ns && s.latest_ns >= s.earliest_ns);
                last_ns = s.earliest_ns;
                for (id, v) in ids.iter().zip(&s.values) {
                    let want = (k as u64 + 1) * step(*id);
                    let want = if format == OutputFormat::Values32 {
                        want & 0xFFFF_FFFF
                    } else {
                        want
                    };
                    assert_eq!(*v, want, "{format:?} {ts:?} sample {k} id {id:#x}");
                }
            }
            if ts == TimestampSource::Rtc {
                // The real-time clock: within a minute of now.
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64;
                assert!(
                    now.abs_diff(last_ns) < 60_000_000_000,
                    "RTC {last_ns} vs {now}"
                );
            }
        }
    }
}

#[test]
fn local_ports_are_keyed_by_the_node_guids_of_the_adapters_functions() {
    let host = FakeHost::new("28.43.1000");
    let text = host.doca_section(&standin_library(), "");
    let cfg = Config::parse(&text, "test.toml").expect("config");
    let opened = sampler::open(&cfg.doca).expect("open on the stand-in");
    let guids: Vec<Guid> = opened.nodes.iter().map(|n| n.id.guid).collect();
    assert_eq!(guids, vec![Guid(PF0_GUID), Guid(PF1_GUID)]);
    assert_eq!(
        opened.ports,
        vec![(Guid(PF0_GUID), 1), (Guid(PF1_GUID), 1)],
        "local port 1 is PF0's port, local port 2 PF1's"
    );
    assert_eq!(&*opened.nodes[0].id.description, "testhost mlx5_0");
    assert_eq!(opened.nodes[0].ports[0].lid, 7);
}

/// Run `ibpm-agentx run --backend doca --no-agentx` with `config` and the
/// stand-in's switches `env`; returns (exit code, stderr) once it exits.
fn run_doca(config: Option<&str>, env: &[(&str, &str)]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_ibpm-agentx"));
    cmd.args(["run", "--backend", "doca", "--no-agentx"])
        .env_remove("IBPM_DOCA_LIBRARY")
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    if let Some(c) = config {
        let p = dir.path().join("agent.toml");
        std::fs::write(&p, c).unwrap();
        cmd.arg("--config").arg(p);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("run the agent");
    let start = Instant::now();
    loop {
        if let Ok(Some(st)) = child.try_wait() {
            let mut err = String::new();
            use std::io::Read;
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return (st.code(), err);
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the agent did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn one_line(err: &str) -> &str {
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line expected: {err}");
    lines[0]
}

#[test]
fn without_doca_the_backend_says_in_one_line_what_is_missing() {
    // This host has no DOCA: the default libraries cannot be loaded.
    let (code, err) = run_doca(None, &[]);
    assert_eq!(code, Some(1), "{err}");
    let l = one_line(&err);
    assert!(
        l.starts_with("ibpm-agentx: DOCA is not installed")
            && l.contains("libdoca_common.so.2")
            && l.contains("DOCA host package"),
        "{l}"
    );
}

#[test]
fn each_missing_requirement_is_one_line() {
    let lib = standin_library();
    let host = FakeHost::new("28.43.1000");
    let section = |extra: &str| host.doca_section(&lib, extra);
    // (configuration, the stand-in's switches, what the line says)
    type Case<'a> = (String, Vec<(&'a str, &'a str)>, Vec<&'a str>);
    let cases: Vec<Case> = vec![
        (
            section("").replace(
                &host.fwctl().display().to_string(),
                &host.dir.path().join("no-fwctl").display().to_string(),
            ),
            vec![],
            vec!["fwctl driver", "does not exist", "modprobe mlx5_fwctl"],
        ),
        (
            section(""),
            vec![(
                "DOCA_STANDIN_FAIL",
                "doca_telemetry_diag_cap_is_supported:4",
            )],
            vec![
                "mlx5_0",
                "does not support telemetry diag",
                "firmware is too old",
            ],
        ),
        (
            section(""),
            vec![("DOCA_STANDIN_OWNED", "1")],
            vec![
                "owned by another telemetry user",
                "doca.force_ownership = true",
            ],
        ),
        (
            section(""),
            vec![("DOCA_STANDIN_FAIL", "doca_telemetry_diag_start:21")],
            vec!["mlx5_0: doca_telemetry_diag_start returned DOCA_ERROR_DRIVER (21)"],
        ),
        (
            section("devices = [\"mlx5_7\"]"),
            vec![],
            vec!["doca.devices names mlx5_7, but DOCA lists mlx5_0"],
        ),
    ];
    for (config, env, want) in cases {
        let (code, err) = run_doca(Some(&config), &env);
        assert_eq!(code, Some(1), "{env:?}: {err}");
        let l = one_line(&err);
        for w in want {
            assert!(l.contains(w), "{env:?}: `{w}` not in: {l}");
        }
    }
    // An empty fwctl directory: the module is installed but not loaded.
    let empty = host.dir.path().join("empty-fwctl");
    std::fs::create_dir(&empty).unwrap();
    let config = section("").replace(
        &host.fwctl().display().to_string(),
        &empty.display().to_string(),
    );
    let (code, err) = run_doca(Some(&config), &[]);
    assert_eq!(code, Some(1));
    assert!(
        one_line(&err).contains("is empty: load it with `sudo modprobe mlx5_fwctl`"),
        "{err}"
    );
    // Firmware older than the guide's 28.43.1000.
    let old = FakeHost::new("28.42.1000");
    let (code, err) = run_doca(Some(&old.doca_section(&lib, "")), &[]);
    assert_eq!(code, Some(1));
    let l = one_line(&err);
    assert!(
        l.contains("mlx5_0: firmware 28.42.1000 is too old") && l.contains("28.43.1000"),
        "{l}"
    );
}

/// Through a private snmpd: the two local ports are rows of the draft's
/// and the extension tables, with the stand-in's counters.
#[test]
fn the_local_ports_show_the_stand_ins_counters_through_snmpd() {
    assert!(
        PrivateSnmpd::available(),
        "snmpd and the net-snmp tools are needed: run scripts/install-deps"
    );
    let snmpd = PrivateSnmpd::start().expect("start a private snmpd");
    let host = FakeHost::new("28.43.1000");
    let period_ms = 50;
    let config = format!(
        "[agentx]\nsocket = \"{}\"\nping_interval = 1\nreconnect_max = 1\n\
         [fabric]\nbackend = \"doca\"\nsweep_interval = 1\n{}",
        snmpd.agentx_addr(),
        host.doca_section(
            &standin_library(),
            &format!("sample_period_ms = {period_ms}\noutput_format = 0\n")
        )
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("agent.toml"), &config).unwrap();
    let log = dir.path().join("agent.log");
    // Port 2's discard counter is rejected by the device; every 4th read
    // finds samples dropped; the first 3 reads fail.
    let rejected = DATA_IDS[4].for_port(2);
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_ibpm-agentx"))
        .args(["run", "--config"])
        .arg(dir.path().join("agent.toml"))
        .env_remove("IBPM_DOCA_LIBRARY")
        .env("RUST_LOG", "info")
        .env("DOCA_STANDIN_REJECT", format!("{rejected:x}"))
        .env("DOCA_STANDIN_DROP", "4")
        .env(
            "DOCA_STANDIN_FAIL",
            "doca_telemetry_diag_query_counters:20:3",
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("run the agent");
    let mut agent = ChildGuard::new("ibpm-agentx", child);

    let target = snmpd.target();
    let get = |name: &str| -> Option<String> {
        let out = SnmpTool::new("snmpget")
            .mibs(true)
            .args(["-v2c", "-c", "public", "-Oqv", &target, name])
            .run();
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if std::env::var("DOCA_TEST_DEBUG").is_ok() {
            eprintln!("{name}: {text} {}", String::from_utf8_lossy(&out.stderr));
        }
        (out.status.success() && !text.contains("No Such")).then_some(text)
    };
    let inst = |col: &str, guid: u64, port: Option<u8>| {
        let g: Vec<String> = guid.to_be_bytes().iter().map(|b| b.to_string()).collect();
        match port {
            Some(p) => format!("IB-PM-MIB::{col}.{}.{p}", g.join(".")),
            None => format!("IB-PM-MIB::{col}.{}", g.join(".")),
        }
    };
    let counter = |col: &str, guid: u64, port: u8| -> Option<u64> {
        // `-Oqv` prints the UNITS after the number.
        get(&inst(col, guid, Some(port)))
            .and_then(|v| v.split_whitespace().next().and_then(|n| n.parse().ok()))
    };
    let start = Instant::now();
    while counter("pmPortHCInOctets", PF1_GUID, 1).is_none() {
        assert!(
            agent.running(),
            "the agent exited: {}",
            std::fs::read_to_string(&log).unwrap()
        );
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no DOCA rows within 30 s: {}",
            std::fs::read_to_string(&log).unwrap()
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // pmNodeTable says DOCA fills both nodes' rows.
    for g in [PF0_GUID, PF1_GUID] {
        assert_eq!(get(&inst("pmNodeSource", g, None)).as_deref(), Some("doca"));
        assert_eq!(
            get(&inst("pmNodeType", g, None)).as_deref(),
            Some("channelAdapter")
        );
    }
    assert_eq!(
        get(&inst("pmPortState", PF0_GUID, Some(1))).as_deref(),
        Some("active")
    );
    // Bytes and packets as the device counts them: (k + 1) x step, no x4.
    // Local port 1 is PF0's port 1, local port 2 PF1's.
    for (guid, lp) in [(PF0_GUID, 1u8), (PF1_GUID, 2)] {
        for d in DATA_IDS {
            let col = format!("pmPortHC{}", ibpm_agentx::fabric::hc::HC[d.slot].name);
            let id = d.for_port(lp);
            let v = counter(&col, guid, 1);
            if id == rejected {
                assert_eq!(v, None, "{col}: the rejected data ID has no instance");
                continue;
            }
            let v = v.unwrap_or_else(|| panic!("{col} of local port {lp}"));
            assert!(
                v > 0 && v % step(id) == 0,
                "{col} = {v}: not a multiple of {}",
                step(id)
            );
        }
        // Counters DOCA does not have stay empty.
        for col in [
            "pmPortHCSymbolErrors",
            "pmPortHCXmitWait",
            "pmPortHCOutUcastPkts",
        ] {
            assert_eq!(counter(col, guid, 1), None, "{col}");
        }
    }
    // The draft's PortCounters table has no row (no PMA reading).
    assert_eq!(
        get(&inst("pmPortCountersSymbolErrors", PF0_GUID, None)),
        None
    );

    // Updates at the configured period: sample number k moves by about
    // elapsed / period between two reads, here once it has moved by 30.
    let k = || counter("pmPortHCInOctets", PF0_GUID, 1).unwrap() / step(DATA_IDS[1].for_port(1));
    let (t1, k1) = (Instant::now(), k());
    let k2 = common::poll(Duration::from_secs(10), Duration::from_millis(20), || {
        Some(k()).filter(|k2| *k2 >= k1 + 30)
    })
    .unwrap_or_else(|| {
        panic!(
            "samples stopped at {}: {}",
            k(),
            std::fs::read_to_string(&log).unwrap()
        )
    });
    let t2 = Instant::now();
    let expected = (t2 - t1).as_secs_f64() * 1000.0 / f64::from(period_ms);
    let moved = (k2 - k1) as f64;
    eprintln!(
        "samples moved {moved} in {:?} (expected about {expected:.0})",
        t2 - t1
    );
    assert!(
        (0.6 * expected..=1.4 * expected).contains(&moved),
        "moved {moved} samples, expected about {expected:.0}"
    );
    // The rate over the last sweep interval: 1001 bytes per 50 ms.
    let start = Instant::now();
    let rate = loop {
        if let Some(r) = get(&inst("pmPortRateInBitsPerSec", PF0_GUID, Some(1))).and_then(|v| {
            v.split_whitespace()
                .next()
                .and_then(|n| n.parse::<u64>().ok())
        }) && r > 0
        {
            break r;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "no rate");
        std::thread::sleep(Duration::from_millis(200));
    };
    let want = 1001.0 * 8.0 * 1000.0 / f64::from(period_ms);
    eprintln!("pmPortRateInBitsPerSec {rate} (stand-in {want:.0})");
    assert!(
        (0.7 * want..=1.3 * want).contains(&(rate as f64)),
        "rate {rate} bit/s, stand-in sends {want:.0}"
    );

    agent.stop();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("does not sample this data ID")
            && text.contains("port_rx_discard_buf_packets[port 2]"),
        "{text}"
    );
    assert!(
        text.contains("dropped samples before the agent read them"),
        "{text}"
    );
}
