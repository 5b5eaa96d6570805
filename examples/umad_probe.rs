//! Discover the fabric through a umad port and read PortCounters of every
//! port, printing one JSON object per line. Runs on a real host or against
//! ibsim with `LD_PRELOAD=.../libumad2sim.so` (then the working directory
//! must be writable: umad2sim fakes sysfs under `./sys-<pid>/`).
//!
//! ```text
//! umad_probe [--ca NAME] [--port N] [--window N] [--repeat N]
//!            [--no-counters] [--split-smp] [--extra LID:PORT]...
//! ```
//! Lines: `{"local":..}`, `{"node":..}`, `{"port":..}` (one per port),
//! `{"counters":..}` / `{"no_counters":..}` per PortCounters read, with
//! `--sm` a `{"subnet":..}` line (the local port's prefix and master SM,
//! and the SMs that are not master), and a final `{"summary":..}` with
//! timings.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use ibpm_agentx::fabric::discover::{
    DiscoverOptions, SmMap, SmSearch, discover_with_stats, read_subnet,
};
use ibpm_agentx::fabric::engine::{Engine, EngineConfig, MadOutcome, MadRequest};
use ibpm_agentx::ib::subnet::SmInfo;
use ibpm_agentx::ib::{Fabric, NodeType};
use ibpm_agentx::transport::MadAddr;
use ibpm_agentx::transport::umad::{UmadConfig, UmadTransport};

use ibpm_agentx::pm::mad::{attr::PORT_COUNTERS as ATTR_PORT_COUNTERS, method::GET as METHOD_GET};

#[derive(Parser)]
struct Args {
    /// CA name (default: the first CA with an active port).
    #[arg(long)]
    ca: Option<String>,
    /// Port number on the CA.
    #[arg(long)]
    port: Option<u8>,
    /// MADs in flight.
    #[arg(long, default_value_t = 64)]
    window: usize,
    /// Read every port's counters this many times (for timing).
    #[arg(long, default_value_t = 1)]
    repeat: u32,
    /// Only discover.
    #[arg(long)]
    no_counters: bool,
    /// Also read PortCounters at LID:PORT (repeatable), even if not discovered.
    #[arg(long, value_name = "LID:PORT")]
    extra: Vec<String>,
    /// Per-MAD timeout (ms) for the kernel and the engine.
    #[arg(long, default_value_t = 200)]
    timeout_ms: u32,
    /// Discover through a second handle (`UmadTransport::smp_handle`)
    /// that receives the SMP completions.
    #[arg(long)]
    split_smp: bool,
    /// Engine retries per MAD.
    #[arg(long, default_value_t = 1)]
    retries: u32,
    /// Also read every port's counters once through this many independent
    /// handles (`UmadTransport::pm_handle`) at the same time, each with its
    /// own engine and the targets in a different order, and count replies
    /// that answer another handle's request.
    #[arg(long, default_value_t = 0)]
    handles: usize,
    /// Also read the local port's subnet and its master SM (PortInfo, then
    /// SMInfo by directed route) and print a `{"subnet":..}` line.
    #[arg(long)]
    sm: bool,
}

fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn opt_str(s: Option<&'static str>) -> String {
    s.map(json_str).unwrap_or_else(|| "null".into())
}

/// (LID, PortSelect, label) of every PMA port to read.
fn targets(fabric: &Fabric) -> Vec<(u16, u8, String)> {
    let mut out = Vec::new();
    for n in &fabric.nodes {
        for p in &n.ports {
            let lid = n.pma_lid(p.num);
            if lid == 0 {
                continue;
            }
            out.push((lid, p.num, format!("{}", n.id.guid)));
        }
    }
    out
}

fn be16(d: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([d[o], d[o + 1]])
}
fn be32(d: &[u8], o: usize) -> u32 {
    u32::from_be_bytes([d[o], d[o + 1], d[o + 2], d[o + 3]])
}

fn main() -> ExitCode {
    let args = Args::parse();
    let cfg = UmadConfig {
        ca: args.ca.clone(),
        port: args.port,
        timeout_ms: args.timeout_ms,
        retries: 0,
        serve_perf_mgt: false,
        ..Default::default()
    };
    let mut t = match UmadTransport::open(&cfg) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("umad_probe: {e}");
            return ExitCode::from(2);
        }
    };
    let lp = t.local_port().clone();
    println!(
        "{{\"local\":{},\"port\":{},\"lid\":{},\"state\":{},\"node_guid\":\"0x{:016x}\"}}",
        json_str(&lp.ca),
        lp.port,
        lp.lid,
        lp.state,
        lp.node_guid
    );

    let dopts = DiscoverOptions {
        window: args.window,
        timeout: Duration::from_millis(u64::from(args.timeout_ms) * 2),
        ..Default::default()
    };
    let discovered = if args.split_smp {
        let mut smp = t.smp_handle();
        discover_with_stats(&mut smp, &dopts)
    } else {
        discover_with_stats(&mut t, &dopts)
    };
    let (fabric, dstats) = match discovered {
        Ok(r) => r,
        Err(e) => {
            eprintln!("umad_probe: {e}");
            return ExitCode::from(3);
        }
    };
    for n in &fabric.nodes {
        let ty = match n.id.node_type {
            NodeType::Switch => "switch",
            NodeType::Ca => "ca",
            NodeType::Router => "router",
        };
        println!(
            "{{\"node\":\"{}\",\"type\":\"{ty}\",\"lid\":{},\"num_ports\":{},\"sys_guid\":\"{}\",\"desc\":{}}}",
            n.id.guid,
            n.id.lid,
            n.id.num_ports,
            n.id.sys_guid,
            json_str(&n.id.description)
        );
        for p in &n.ports {
            let remote = match p.remote() {
                Some((g, rp)) => format!("\"{g}\",\"remote_port\":{rp}"),
                None => "null".into(),
            };
            let peer = p.remote().and_then(|(g, rp)| fabric.node(g)?.port(rp));
            let a = p.assess(peer);
            println!(
                "{{\"port\":\"{}\",\"num\":{},\"guid\":\"{}\",\"lid\":{},\"remote\":{remote},\"width\":{},\"speed\":{},\"width_supported\":\"{}\",\"width_enabled\":\"{}\",\"speed_supported\":\"{}\",\"speed_enabled\":\"{}\",\"width_expected\":{},\"speed_expected\":{},\"degraded\":{}}}",
                n.id.guid,
                p.num,
                p.guid,
                p.lid,
                opt_str(p.width.map(|w| w.name())),
                opt_str(p.speed.map(|s| s.name())),
                p.caps.width_supported,
                p.caps.width_enabled,
                p.caps.speed_supported,
                p.caps.speed_enabled,
                opt_str(a.expected_width.map(|w| w.name())),
                opt_str(a.expected_speed.map(|s| s.name())),
                opt_str(a.health.map(|h| h.name()))
            );
        }
    }

    if args.sm {
        let mut smp = t.smp_handle();
        match read_subnet(&mut smp, &SmMap::of(&fabric), &dopts, SmSearch::EveryNode) {
            Ok(r) => {
                // Flat, as the tests' parser reads it: the master's
                // fields, and the other SMs as `GUID/state` joined by `;`.
                let master = r.sm.map_or(
                    "\"sm_guid\":null".to_string(),
                    |s: SmInfo| {
                        format!(
                            "\"sm_guid\":\"{}\",\"sm_at\":{},\"sm_priority\":{},\"sm_state\":\"{}\",\"sm_act_count\":{}",
                            s.guid, s.lid, s.priority, s.state, s.act_count
                        )
                    },
                );
                let others: Vec<String> = r
                    .others
                    .iter()
                    .map(|s| format!("{}/{}", s.guid, s.state))
                    .collect();
                println!(
                    "{{\"subnet\":\"0x{:016x}\",\"port\":{},\"state\":{},\"sm_lid\":{},{master},\"others\":\"{}\",\"smps\":{}}}",
                    r.prefix,
                    r.port,
                    r.state,
                    r.sm_lid,
                    others.join(";"),
                    r.smps
                );
            }
            Err(e) => {
                eprintln!("umad_probe: reading the subnet: {e}");
                return ExitCode::from(4);
            }
        }
    }

    let mut summary = format!(
        "\"nodes\":{},\"discover_ms\":{:.3},\"smps\":{},\"smp_timeouts\":{}",
        fabric.nodes.len(),
        dstats.elapsed.as_secs_f64() * 1000.0,
        dstats.smps_sent,
        dstats.timeouts
    );

    if !args.no_counters {
        let mut tg = targets(&fabric);
        for e in &args.extra {
            let parsed = e
                .split_once(':')
                .and_then(|(l, p)| Some((l.parse::<u16>().ok()?, p.parse::<u8>().ok()?)));
            match parsed {
                Some((lid, port)) => tg.push((lid, port, "extra".into())),
                None => {
                    eprintln!("umad_probe: --extra wants LID:PORT, got {e:?}");
                    return ExitCode::from(2);
                }
            }
        }
        let mut reqs = Vec::new();
        for _ in 0..args.repeat.max(1) {
            for (lid, port, _) in &tg {
                let mut data = [0u8; 192];
                data[1] = *port; // PortSelect, data bits 8..16
                reqs.push(MadRequest {
                    to: MadAddr::gsi(*lid),
                    method: METHOD_GET,
                    attr_id: ATTR_PORT_COUNTERS,
                    attr_mod: 0,
                    data,
                });
            }
        }
        if args.handles > 0 {
            match concurrent_handles(&t, &tg, args.handles, args.window, args.timeout_ms) {
                Ok(s) => summary.push_str(&s),
                Err(e) => {
                    eprintln!("umad_probe: {e}");
                    return ExitCode::from(4);
                }
            }
        }
        let mut engine = Engine::new(
            Box::new(t),
            EngineConfig {
                window: args.window,
                timeout: Duration::from_millis(u64::from(args.timeout_ms)),
                retries: args.retries,
            },
        );
        let start = Instant::now();
        let n_targets = tg.len();
        let mut lines = vec![String::new(); n_targets];
        let stats = engine.run(&reqs, |i, outcome| {
            let ti = i % n_targets;
            let (lid, port, ref label) = tg[ti];
            lines[ti] = match outcome {
                MadOutcome::Reply { data, .. } => {
                    let d = &data[..];
                    format!(
                        "{{\"counters\":\"{label}\",\"lid\":{lid},\"port\":{port},\"PortSelect\":{},\"SymbolErrorCounter\":{},\"LinkErrorRecoveryCounter\":{},\"LinkDownedCounter\":{},\"PortRcvErrors\":{},\"PortXmitDiscards\":{},\"PortXmitData\":{},\"PortRcvData\":{},\"PortXmitPkts\":{},\"PortRcvPkts\":{},\"PortXmitWait\":{}}}",
                        d[1],
                        be16(d, 4),
                        d[6],
                        d[7],
                        be16(d, 8),
                        be16(d, 14),
                        be32(d, 24),
                        be32(d, 28),
                        be32(d, 32),
                        be32(d, 36),
                        be32(d, 40)
                    )
                }
                other => format!(
                    "{{\"no_counters\":\"{label}\",\"lid\":{lid},\"port\":{port},\"outcome\":{}}}",
                    json_str(&format!("{other:?}"))
                ),
            };
        });
        let el = start.elapsed();
        for l in &lines {
            println!("{l}");
        }
        summary.push_str(&format!(
            ",\"pm_mads\":{},\"pm_replies\":{},\"pm_timeouts\":{},\"pm_ms\":{:.3},\"pm_mads_per_s\":{:.0}",
            stats.sent,
            stats.replies,
            stats.timeouts,
            el.as_secs_f64() * 1000.0,
            stats.sent as f64 / el.as_secs_f64().max(1e-9)
        ));
    }
    println!("{{\"summary\":{{{summary}}}}}");
    ExitCode::SUCCESS
}

/// Read every target through `n` handles at once; returns summary fields.
fn concurrent_handles(
    t: &UmadTransport,
    tg: &[(u16, u8, String)],
    n: usize,
    window: usize,
    timeout_ms: u32,
) -> Result<String, String> {
    let mut threads = Vec::new();
    let start = Instant::now();
    for h in 0..n {
        let handle = t.pm_handle().map_err(|e| e.to_string())?;
        // Each handle walks the targets from a different starting point, so
        // equal TIDs on two handles name different ports.
        let mut order: Vec<(u16, u8)> = tg.iter().map(|(l, p, _)| (*l, *p)).collect();
        let len = order.len().max(1);
        order.rotate_left(h * len / n % len);
        threads.push(std::thread::spawn(move || {
            let reqs: Vec<MadRequest> = order
                .iter()
                .map(|(lid, port)| {
                    let mut data = [0u8; 192];
                    data[1] = *port;
                    MadRequest {
                        to: MadAddr::gsi(*lid),
                        method: METHOD_GET,
                        attr_id: ATTR_PORT_COUNTERS,
                        attr_mod: 0,
                        data,
                    }
                })
                .collect();
            let mut engine = Engine::new(
                Box::new(handle),
                EngineConfig {
                    window,
                    timeout: Duration::from_millis(u64::from(timeout_ms)),
                    retries: 1,
                },
            );
            let mut mismatches = 0u64;
            let stats = engine.run(&reqs, |i, o| {
                if let MadOutcome::Reply { data, .. } = o
                    && data[1] != order[i].1
                {
                    mismatches += 1;
                }
            });
            (stats, mismatches)
        }));
    }
    let (mut replies, mut timeouts, mut mismatches) = (0, 0, 0);
    for th in threads {
        let (st, mm) = th.join().map_err(|_| "a handle thread panicked")?;
        replies += st.replies;
        timeouts += st.timeouts;
        mismatches += mm;
    }
    Ok(format!(
        ",\"handles\":{n},\"handle_replies\":{replies},\"handle_timeouts\":{timeouts},\"handle_mismatches\":{mismatches},\"handles_ms\":{:.3}",
        start.elapsed().as_secs_f64() * 1000.0
    ))
}
