//! The floor for `scripts/bench-walk`: a minimal AgentX subagent that
//! answers Get, GetNext and GetBulk from a flat sorted list of varbinds,
//! with the project's own AgentX codec and GetBulk assembly. Whatever the
//! agent spends per varbind beyond this is the cost of its MIB view.
//!
//! ```text
//! agentx_floor --socket DIR/master --subtree 1.3.6.1.3.117 --priority 1 < walk.txt
//! ```
//! The list is read from standard input: the output of
//! `snmpbulkwalk -On -Ox -Ot -Oe` (one `.OID = TYPE: value` a line). It
//! prints `ready N` once registered, then serves until the master closes
//! the session or the process is killed.

use std::io::{BufRead, Read, Write};
use std::os::unix::net::UnixStream;
use std::process::ExitCode;

use clap::Parser;
use ibpm_agentx::agentx::core::get_bulk;
use ibpm_agentx::agentx::pdu::{self, Framer, Header, Payload, Pdu, Region, ResError, SearchRange};
use ibpm_agentx::mib::{MibHandler, Oid, Value, VarBind};

#[derive(Parser)]
struct Args {
    /// The master's AgentX socket (a Unix socket path).
    #[arg(long)]
    socket: String,
    /// The subtree to register.
    #[arg(long, default_value = "1.3.6.1.3.117")]
    subtree: String,
    /// Registration priority (lower wins over the agent's 127).
    #[arg(long, default_value_t = 1)]
    priority: u8,
}

/// The flat list, sorted by name.
struct Flat(Vec<VarBind>);

impl MibHandler for Flat {
    fn get(&self, oid: &Oid) -> Value {
        match self.0.binary_search_by(|vb| vb.name.cmp(oid)) {
            Ok(i) => self.0[i].value.clone(),
            Err(_) => Value::NoSuchInstance,
        }
    }

    fn get_next(&self, start: &Oid, include: bool, end: Option<&Oid>) -> Option<VarBind> {
        let i = self.0.partition_point(|vb| {
            if include {
                vb.name < *start
            } else {
                vb.name <= *start
            }
        });
        let vb = self.0.get(i)?;
        if end.is_some_and(|e| !e.is_empty() && vb.name >= *e) {
            return None;
        }
        Some(vb.clone())
    }
}

/// One line of `snmpbulkwalk -On -Ox -Ot -Oe` output, or `None` for what
/// the floor does not serve.
fn parse_line(line: &str) -> Option<VarBind> {
    let (name, rest) = line.split_once(" = ")?;
    let name: Oid = name.trim_start_matches('.').parse().ok()?;
    if rest == "\"\"" {
        return Some(VarBind::new(name, Value::OctetString(Vec::new())));
    }
    // -Ot prints TimeTicks as a bare number.
    if let Ok(ticks) = rest.parse() {
        return Some(VarBind::new(name, Value::TimeTicks(ticks)));
    }
    let (ty, v) = rest
        .split_once(": ")
        .unwrap_or((rest.trim_end_matches(':'), ""));
    let v = v.trim();
    let value = match ty {
        "INTEGER" => Value::Integer(v.parse().ok()?),
        "Gauge32" => Value::Gauge32(v.parse().ok()?),
        "Counter32" => Value::Counter32(v.parse().ok()?),
        "Counter64" => Value::Counter64(v.parse().ok()?),
        "Timeticks" => {
            let n = v.trim_start_matches('(').split(')').next()?;
            Value::TimeTicks(n.parse().ok()?)
        }
        "Hex-STRING" => Value::OctetString(
            v.split_whitespace()
                .map(|b| u8::from_str_radix(b, 16).ok())
                .collect::<Option<_>>()?,
        ),
        "STRING" => Value::OctetString(v.trim_matches('"').as_bytes().to_vec()),
        "OID" => Value::ObjectIdentifier(v.trim_start_matches('.').parse().ok()?),
        "IpAddress" => {
            let o: Vec<u8> = v
                .split('.')
                .map(|s| s.parse().ok())
                .collect::<Option<_>>()?;
            Value::IpAddress(o.try_into().ok()?)
        }
        _ => return None,
    };
    Some(VarBind::new(name, value))
}

/// Lines of the walk, with hex strings continued on the next lines joined.
fn read_walk(input: impl BufRead) -> std::io::Result<Vec<VarBind>> {
    let mut lines: Vec<String> = Vec::new();
    for line in input.lines() {
        let line = line?;
        match lines.last_mut() {
            Some(last) if !line.starts_with('.') => {
                last.push(' ');
                last.push_str(line.trim());
            }
            _ => lines.push(line),
        }
    }
    let mut vbs = Vec::with_capacity(lines.len());
    for l in &lines {
        match parse_line(l) {
            Some(vb) => vbs.push(vb),
            None => eprintln!("agentx_floor: not served: {l}"),
        }
    }
    vbs.sort_by(|a, b| a.name.cmp(&b.name));
    vbs.dedup_by(|a, b| a.name == b.name);
    Ok(vbs)
}

fn send(stream: &mut UnixStream, pdu: &Pdu) -> Result<(), String> {
    let bytes = pdu::encode(pdu, pdu.byte_order()).map_err(|e| e.to_string())?;
    stream.write_all(&bytes).map_err(|e| e.to_string())
}

/// Reads the next complete PDU.
fn recv(
    stream: &mut UnixStream,
    framer: &mut Framer,
    buf: &mut [u8],
) -> Result<Option<Pdu>, String> {
    loop {
        if let Some(frame) = framer.next_frame() {
            let frame = frame.map_err(|e| e.to_string())?;
            return pdu::decode(&frame).map(Some).map_err(|e| e.to_string());
        }
        let n = stream.read(buf).map_err(|e| e.to_string())?;
        if n == 0 {
            return Ok(None);
        }
        framer.push(&buf[..n]);
    }
}

fn header(p: &Pdu) -> Header {
    Header {
        version: 1,
        pdu_type: p.payload.pdu_type() as u8,
        flags: p.flags,
        session_id: p.session_id,
        transaction_id: p.transaction_id,
        packet_id: p.packet_id,
        payload_length: 0,
    }
}

fn next_in(flat: &Flat, r: &SearchRange) -> VarBind {
    flat.get_next(&r.start, r.include, r.end_bound())
        .unwrap_or_else(|| VarBind::new(r.start.clone(), Value::EndOfMibView))
}

fn serve(args: &Args, flat: &Flat) -> Result<(), String> {
    let subtree: Oid = args.subtree.parse().map_err(|_| "bad --subtree")?;
    let mut stream = UnixStream::connect(&args.socket).map_err(|e| e.to_string())?;
    let mut framer = Framer::new(pdu::DEFAULT_MAX_PDU);
    let mut buf = vec![0u8; 65536];
    let open = Payload::Open {
        timeout: 0,
        id: Oid::new(&[]),
        description: b"ibpm-agentx floor".to_vec(),
    };
    let mut req = Pdu::new(0, 0, 1, open);
    req.flags = pdu::flags::NETWORK_BYTE_ORDER;
    send(&mut stream, &req)?;
    let sid = recv(&mut stream, &mut framer, &mut buf)?
        .ok_or("closed before Open was answered")?
        .session_id;
    let mut reg = Pdu::new(
        sid,
        0,
        2,
        Payload::Register {
            timeout: 0,
            region: Region::subtree(subtree, args.priority),
        },
    );
    reg.flags = pdu::flags::NETWORK_BYTE_ORDER;
    send(&mut stream, &reg)?;
    match recv(&mut stream, &mut framer, &mut buf)? {
        Some(Pdu {
            payload: Payload::Response { error, .. },
            ..
        }) if error.is_ok() => {}
        other => return Err(format!("Register refused: {other:?}")),
    }
    println!("ready {}", flat.0.len());
    std::io::stdout().flush().ok();
    while let Some(p) = recv(&mut stream, &mut framer, &mut buf)? {
        let h = header(&p);
        let vbs = match &p.payload {
            Payload::Get { ranges, .. } => ranges
                .iter()
                .map(|r| VarBind::new(r.start.clone(), flat.get(&r.start)))
                .collect(),
            Payload::GetNext { ranges, .. } => ranges.iter().map(|r| next_in(flat, r)).collect(),
            Payload::GetBulk {
                non_repeaters,
                max_repetitions,
                ranges,
                ..
            } => get_bulk(flat, *non_repeaters, *max_repetitions, ranges),
            Payload::Close { .. } => return Ok(()),
            Payload::Response { .. } | Payload::CleanupSet => continue,
            _ => vec![],
        };
        let mut resp = Pdu::response_to(&h, ResError::NO_ERROR, 0, vbs);
        resp.flags = p.flags & pdu::flags::NETWORK_BYTE_ORDER;
        send(&mut stream, &resp)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    let flat = match read_walk(std::io::stdin().lock()) {
        Ok(v) if !v.is_empty() => Flat(v),
        Ok(_) => {
            eprintln!("agentx_floor: no varbinds on standard input");
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("agentx_floor: {e}");
            return ExitCode::FAILURE;
        }
    };
    match serve(&args, &flat) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agentx_floor: {e}");
            ExitCode::FAILURE
        }
    }
}
