//! The exposition of a snapshot, pure: a scrape writes every family the
//! asked collectors hold, one family at a time (both formats group a
//! family's samples), into any writer. The HTTP edge hands it a writer that
//! sends each 64 KiB as it fills, so the body is never built whole.

use std::io::{self, Write};
use std::time::Instant;

use super::HttpCounters;
use super::families::{
    BUILD_INFO, BUILD_LABELS, Collector, Collectors, FAMILIES, Family, Kind, Label, NODE_INFO,
    NODE_LABELS, PORT_INFO, PORT_LABELS, Part, SUBNET_INFO, SUBNET_LABELS, Scale, Shown,
};
use crate::edge::refusal::Edge;
use crate::fabric::cache::Snapshot;
use crate::fabric::record::{NodeRecord, PortRecord};
use crate::ib::subnet::{SmState, SubnetView, prefix_text};
use crate::ib::{Guid, LinkSpeed, LinkWidth, PortState};
use crate::mib::EndpointCounters;
use crate::mib::Value;
use crate::mib::index::{IndexScheme, RowIndex};
use crate::mib::read::{Row, date_and_time_ms, read_at, subnet_of, timestamp};

/// The exposition format of a scrape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The Prometheus text format 0.0.4.
    Text,
    /// OpenMetrics 1.0.
    OpenMetrics,
}

impl Format {
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }

    /// The format an Accept header prefers: OpenMetrics when it asks for
    /// `application/openmetrics-text` at a quality no lower than the text
    /// format's (Prometheus asks for both, OpenMetrics first), else text.
    pub fn negotiate(accept: Option<&str>) -> Format {
        let Some(accept) = accept else {
            return Format::Text;
        };
        let (mut om, mut text) = (0.0f32, 0.0f32);
        for range in accept.split(',') {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or("").to_ascii_lowercase();
            let mut q = 1.0f32;
            let mut version = None;
            for p in parts {
                if let Some((k, v)) = p.split_once('=') {
                    match k.trim().to_ascii_lowercase().as_str() {
                        "q" => q = v.trim().parse().unwrap_or(0.0),
                        "version" => version = Some(v.trim().to_string()),
                        _ => {}
                    }
                }
            }
            let q = if q.is_finite() {
                q.clamp(0.0, 1.0)
            } else {
                0.0
            };
            match media.as_str() {
                "application/openmetrics-text"
                    if version
                        .as_deref()
                        .is_none_or(|v| v == "1.0.0" || v == "0.0.1") =>
                {
                    om = om.max(q)
                }
                "text/plain" | "*/*" | "text/*" => text = text.max(q),
                _ => {}
            }
        }
        if om > 0.0 && om >= text {
            Format::OpenMetrics
        } else {
            Format::Text
        }
    }
}

/// What one scrape renders.
pub struct Scrape<'a> {
    pub snap: &'a Snapshot,
    pub endpoint: &'a EndpointCounters,
    pub http: &'a HttpCounters,
    pub format: Format,
    pub collectors: Collectors,
    /// The Unix time of the snapshot's publication, in seconds.
    pub taken_unix: Option<f64>,
    /// The event log's counts by kind, when there is a log.
    pub events: Option<[u64; crate::events::KIND_COUNT]>,
    /// When it is rendered (monotonic): what the MIB reads at `now`.
    pub now: Instant,
}

/// Writes the exposition of `s` to `out`.
pub fn render<W: Write>(s: &Scrape, out: &mut W) -> io::Result<()> {
    let mut w = Out {
        out,
        format: s.format,
        line: Vec::with_capacity(256),
    };
    if s.collectors.has(Collector::Node) {
        node_families(s, &mut w)?;
    }
    if s.collectors.has(Collector::Port) {
        port_info(s, &mut w)?;
    }
    if s.collectors.has(Collector::Subnet) {
        subnet_info(s, &mut w)?;
    }
    for f in FAMILIES
        .iter()
        .filter(|f| !matches!(f.part, Part::Node | Part::Health) && s.collectors.has(f.collector))
    {
        match f.table.index {
            IndexScheme::Scalar => agent_family(s, f, &mut w)?,
            IndexScheme::Subnet => subnet_family(s, f, &mut w)?,
            _ => port_family(s, f, &mut w)?,
        }
    }
    if s.collectors.has(Collector::Agent) {
        agent_extras(s, &mut w)?;
        if let Some(c) = &s.events {
            events::events_family(c, &mut w)?;
        }
    }
    if s.collectors.has(Collector::Health) {
        health::health_families(s, &mut w)?;
    }
    if s.format == Format::OpenMetrics {
        w.out.write_all(b"# EOF\n")?;
    }
    Ok(())
}

/// The writer and the line being built.
struct Out<'w, W: Write> {
    out: &'w mut W,
    format: Format,
    line: Vec<u8>,
}

impl<W: Write> Out<'_, W> {
    /// Begins the line of a sample of `f` (its name) in `self.line`, the
    /// family's header written first unless `started`.
    fn sample(&mut self, f: &Family, kind: HeaderKind, started: &mut bool) -> io::Result<()> {
        if !*started {
            self.header(&f.name, kind, &f.help)?;
            *started = true;
        }
        let l = &mut self.line;
        l.clear();
        l.extend_from_slice(f.name.as_bytes());
        l.extend_from_slice(sample_suffix(kind).as_bytes());
        Ok(())
    }

    /// `# HELP` and `# TYPE` of a family named `name` (without `_total`).
    fn header(&mut self, name: &str, kind: HeaderKind, help: &str) -> io::Result<()> {
        let (suffix, ty) = match (self.format, kind) {
            (Format::Text, HeaderKind::Counter) => ("_total", "counter"),
            (Format::OpenMetrics, HeaderKind::Counter) => ("", "counter"),
            (_, HeaderKind::Gauge) => ("", "gauge"),
            (Format::Text, HeaderKind::Info) => ("_info", "gauge"),
            (Format::OpenMetrics, HeaderKind::Info) => ("", "info"),
        };
        let l = &mut self.line;
        l.clear();
        let _ = write!(l, "# HELP {name}{suffix} ");
        for b in help.bytes() {
            match b {
                b'\\' => l.extend_from_slice(b"\\\\"),
                b'\n' => l.extend_from_slice(b"\\n"),
                _ => l.push(b),
            }
        }
        let _ = writeln!(l, "\n# TYPE {name}{suffix} {ty}");
        self.out.write_all(&self.line)
    }
}

#[derive(Clone, Copy)]
enum HeaderKind {
    Counter,
    Gauge,
    Info,
}

/// The sample name's suffix of a family of `kind`.
fn sample_suffix(kind: HeaderKind) -> &'static str {
    match kind {
        HeaderKind::Counter => "_total",
        HeaderKind::Gauge => "",
        HeaderKind::Info => "_info",
    }
}

/// Appends `"0x" + 16 hex digits`.
fn push_guid(l: &mut Vec<u8>, g: Guid) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    l.extend_from_slice(b"0x");
    for i in (0..16).rev() {
        l.push(HEX[((g.0 >> (i * 4)) & 0xF) as usize]);
    }
}

fn push_u64(l: &mut Vec<u8>, v: u64) {
    l.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Appends a label value, escaped.
fn push_escaped(l: &mut Vec<u8>, v: &[u8]) {
    for &b in v {
        match b {
            b'\\' => l.extend_from_slice(b"\\\\"),
            b'"' => l.extend_from_slice(b"\\\""),
            b'\n' => l.extend_from_slice(b"\\n"),
            _ => l.push(b),
        }
    }
}

/// Text written into a line as a label value, escaped.
struct Escaping<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for Escaping<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        push_escaped(self.0, s.as_bytes());
        Ok(())
    }
}

/// Appends `,name="value"` (or `name="value"` first).
fn push_label(l: &mut Vec<u8>, first: bool, name: &str, value: &[u8]) {
    if !first {
        l.push(b',');
    }
    l.extend_from_slice(name.as_bytes());
    l.extend_from_slice(b"=\"");
    push_escaped(l, value);
    l.push(b'"');
}

/// Appends `{node_guid="0x…",port="N"` (the brace left open).
fn push_port_labels(l: &mut Vec<u8>, guid: Guid, port: u8) {
    l.extend_from_slice(b"{node_guid=\"");
    push_guid(l, guid);
    l.extend_from_slice(b"\",port=\"");
    push_u64(l, port.into());
    l.push(b'"');
}

/// The sample value of a MIB value under `scale`.
fn push_value(l: &mut Vec<u8>, v: &Value, scale: Scale) -> bool {
    if scale == Scale::Decimal {
        let Value::OctetString(text) = v else {
            return false;
        };
        let ok = std::str::from_utf8(text)
            .ok()
            .and_then(|t| t.parse::<f64>().ok())
            .is_some_and(f64::is_finite);
        if ok {
            l.extend_from_slice(text);
        }
        return ok;
    }
    if scale == Scale::DateSeconds {
        let Some(ms) = date_and_time_ms(v) else {
            return false;
        };
        let _ = write!(l, "{}.{:03}", ms / 1000, ms % 1000);
        return true;
    }
    let raw = match *v {
        Value::Counter64(x) => x,
        Value::Gauge32(x) | Value::Counter32(x) | Value::TimeTicks(x) => x.into(),
        Value::Integer(x) => {
            if x < 0 {
                let _ = write!(l, "{x}");
                return true;
            }
            x as u64
        }
        _ => return false,
    };
    match scale {
        Scale::One => push_u64(l, raw),
        Scale::Times(k) => push_u64(l, raw.saturating_mul(k)),
        Scale::AtLeast(min) => push_u64(l, u64::from(raw >= min)),
        Scale::Below(max) => push_u64(l, u64::from(raw < max)),
        Scale::MillisToSeconds => {
            let _ = write!(l, "{}.{:03}", raw / 1000, raw % 1000);
        }
        Scale::Decimal | Scale::UnixSeconds | Scale::DateSeconds => return false,
        Scale::LaneBytesPerSecond => {
            let rate = u32::try_from(raw)
                .ok()
                .and_then(LinkSpeed::from_mib)
                .map_or(0, |s| s.lane_mbps() * 125_000);
            push_u64(l, rate);
        }
    }
    true
}

/// The kind of a family's header.
fn header_kind(k: Kind) -> HeaderKind {
    match k {
        Kind::Counter => HeaderKind::Counter,
        Kind::Gauge => HeaderKind::Gauge,
    }
}

/// A row of `node`'s port `port` (or of the node, `port` None).
fn row<'a>(s: &'a Scrape, node: &'a NodeRecord, port: Option<&'a PortRecord>) -> Row<'a> {
    Row {
        snap: s.snap,
        endpoint: s.endpoint,
        node: Some(node),
        port,
        subnet: None,
        plan: None,
        index: RowIndex::port(node.id.guid, port.map_or(0, |p| p.num())),
        port_select: 0,
        now: s.now,
    }
}

/// The nodes whose port series a scrape shows: those that answered. An
/// unreachable node keeps only its info and `infiniband_node_up 0`.
fn answering<'a>(s: &'a Scrape) -> impl Iterator<Item = &'a NodeRecord> {
    s.snap.nodes.iter().map(|n| &**n).filter(|n| n.reachable)
}

fn port_family<W: Write>(s: &Scrape, f: &Family, w: &mut Out<W>) -> io::Result<()> {
    let t = f.table;
    let kind = header_kind(f.kind);
    let lanes = if t.index == IndexScheme::NodeGuidPortLane {
        t.index.lanes()
    } else {
        1
    };
    let mut started = false;
    // Counters only of the ports whose link was ever up: an uncabled port
    // shows its state and info alone (the `port` collector).
    let linked_only = f.collector != Collector::Port;
    for node in answering(s).filter(|n| (t.present)(n)) {
        for port in node.ports() {
            if linked_only && !port.ever_linked() {
                continue;
            }
            let mut r = row(s, node, Some(port));
            for lane in 0..lanes {
                r.index.lane = lane;
                let Some(v) = read_at(f.column, t, &r) else {
                    continue;
                };
                w.sample(f, kind, &mut started)?;
                let l = &mut w.line;
                push_port_labels(l, node.id.guid, port.num());
                if let Some(label) = f.lane {
                    l.push(b',');
                    l.extend_from_slice(label.as_bytes());
                    l.extend_from_slice(b"=\"");
                    push_u64(l, lane.into());
                    l.push(b'"');
                }
                l.extend_from_slice(b"} ");
                if push_value(l, &v, f.scale) {
                    l.push(b'\n');
                    w.out.write_all(l)?;
                }
            }
        }
    }
    Ok(())
}

/// Appends the labels `labels` read from row `r`, each `,name="value"`
/// (the first without its comma when `first`); a label shown "or omit"
/// with an empty value is left out.
fn push_info_labels(l: &mut Vec<u8>, labels: &[Label], r: &Row, first: bool) {
    for (i, &(name, shown, col, t)) in labels.iter().enumerate() {
        let v = read_at(col, t, r);
        let mark = l.len();
        if !(first && i == 0) {
            l.push(b',');
        }
        l.extend_from_slice(name.as_bytes());
        l.extend_from_slice(b"=\"");
        let start = l.len();
        push_shown(l, v.as_ref(), shown, r.snap);
        let omit = matches!(shown, Shown::TextOrOmit | Shown::SubnetOrOmit);
        if omit && l.len() == start {
            l.truncate(mark);
        } else {
            l.push(b'"');
        }
    }
}

/// A label's value as `shown` shows a column's value (empty when the row
/// has none).
fn push_shown(l: &mut Vec<u8>, v: Option<&Value>, shown: Shown, snap: &Snapshot) {
    let number = match v {
        Some(Value::Gauge32(x)) => Some(u64::from(*x)),
        Some(Value::Integer(x)) => u64::try_from(*x).ok(),
        _ => None,
    };
    let octets = |v: Option<&Value>| match v {
        Some(Value::OctetString(b)) => Some(b.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x))),
        _ => None,
    };
    let name = |n: Option<&'static str>| n.unwrap_or("").as_bytes();
    let mib = || number.and_then(|n| u32::try_from(n).ok());
    match shown {
        Shown::Text | Shown::TextOrOmit => {
            if let Some(Value::OctetString(b)) = v {
                push_escaped(l, b);
            }
        }
        Shown::SubnetOrOmit => {
            let index = number.and_then(|n| u8::try_from(n).ok());
            let subnet = index.and_then(|n| subnet_of(snap, n.checked_sub(1)?));
            if let Some(sn) = subnet {
                use std::fmt::Write as _;
                let _ = write!(Escaping(l), "{sn}");
            }
        }
        Shown::Prefix => {
            if let Some(p) = octets(v) {
                l.extend_from_slice(prefix_text(p).as_bytes());
            }
        }
        Shown::SmState => l.extend_from_slice(match number {
            Some(n @ 0..=3) => SmState::from_bits(n as u8).name().as_bytes(),
            Some(_) => b"none",
            None => b"",
        }),
        Shown::Number => push_u64(l, number.unwrap_or(0)),
        Shown::NumberOrEmpty => {
            if let Some(n) = number.filter(|&n| n != 0) {
                push_u64(l, n);
            }
        }
        Shown::Hex(digits) => {
            let _ = write!(l, "0x{:0digits$x}", number.unwrap_or(0));
        }
        Shown::Guid => push_guid(l, Guid(octets(v).unwrap_or(0))),
        Shown::GuidOrEmpty => {
            if let Some(g) = octets(v).filter(|&g| g != 0) {
                push_guid(l, Guid(g));
            }
        }
        Shown::NodeType => l.extend_from_slice(match number {
            Some(1) => b"ca",
            Some(2) => b"switch",
            Some(3) => b"router",
            _ => b"",
        }),
        Shown::Width => {
            l.extend_from_slice(name(mib().and_then(LinkWidth::from_mib).map(|x| x.name())))
        }
        Shown::Speed => {
            l.extend_from_slice(name(mib().and_then(LinkSpeed::from_mib).map(|x| x.name())))
        }
        Shown::PortState => {
            l.extend_from_slice(name(mib().and_then(PortState::from_mib).map(|x| x.name())))
        }
    }
}

/// `infiniband_node_info` of every node, then the node's families
/// (`infiniband_node_up`).
fn node_families<W: Write>(s: &Scrape, w: &mut Out<W>) -> io::Result<()> {
    w.header(NODE_INFO.0, HeaderKind::Info, NODE_INFO.1)?;
    for n in s.snap.nodes.iter() {
        let r = row(s, n, None);
        let l = &mut w.line;
        l.clear();
        l.extend_from_slice(NODE_INFO.0.as_bytes());
        l.extend_from_slice(b"_info{node_guid=\"");
        push_guid(l, n.id.guid);
        l.push(b'"');
        push_info_labels(l, &NODE_LABELS[..], &r, false);
        l.extend_from_slice(b"} 1\n");
        w.out.write_all(l)?;
    }
    for f in FAMILIES.iter().filter(|f| f.part == Part::Node) {
        let kind = header_kind(f.kind);
        w.header(&f.name, kind, &f.help)?;
        for n in s.snap.nodes.iter() {
            let Some(v) = read_at(f.column, f.table, &row(s, n, None)) else {
                continue;
            };
            let l = &mut w.line;
            l.clear();
            l.extend_from_slice(f.name.as_bytes());
            l.extend_from_slice(sample_suffix(kind).as_bytes());
            l.extend_from_slice(b"{node_guid=\"");
            push_guid(l, n.id.guid);
            l.extend_from_slice(b"\"} ");
            if push_value(l, &v, f.scale) {
                l.push(b'\n');
                w.out.write_all(l)?;
            }
        }
    }
    Ok(())
}

/// `infiniband_port_info` of every port of the nodes that answer.
fn port_info<W: Write>(s: &Scrape, w: &mut Out<W>) -> io::Result<()> {
    w.header(PORT_INFO.0, HeaderKind::Info, PORT_INFO.1)?;
    for node in answering(s) {
        for p in node.ports() {
            let r = row(s, node, Some(p));
            let l = &mut w.line;
            l.clear();
            l.extend_from_slice(PORT_INFO.0.as_bytes());
            l.extend_from_slice(b"_info");
            push_port_labels(l, node.id.guid, p.num());
            push_info_labels(l, &PORT_LABELS[..], &r, false);
            l.extend_from_slice(b"} 1\n");
            w.out.write_all(l)?;
        }
    }
    Ok(())
}

/// The row of `subnet` in pmSubnetTable.
fn subnet_row<'a>(s: &'a Scrape, subnet: &'a SubnetView) -> Row<'a> {
    Row {
        snap: s.snap,
        endpoint: s.endpoint,
        node: None,
        port: None,
        subnet: Some(subnet),
        plan: None,
        index: RowIndex::subnet(subnet.index.saturating_add(1)),
        port_select: 0,
        now: s.now,
    }
}

/// `infiniband_subnet_info` of every subnet (nothing while there is none).
fn subnet_info<W: Write>(s: &Scrape, w: &mut Out<W>) -> io::Result<()> {
    if s.snap.subnets.is_empty() {
        return Ok(());
    }
    w.header(SUBNET_INFO.0, HeaderKind::Info, SUBNET_INFO.1)?;
    for sn in s.snap.subnets.iter() {
        let l = &mut w.line;
        l.clear();
        l.extend_from_slice(SUBNET_INFO.0.as_bytes());
        l.extend_from_slice(b"_info{");
        push_info_labels(l, &SUBNET_LABELS[..], &subnet_row(s, sn), true);
        l.extend_from_slice(b"} 1\n");
        w.out.write_all(l)?;
    }
    Ok(())
}

/// A family of the `subnet` collector: a sample per subnet, labelled with
/// the subnet info series' first label (`subnet`).
fn subnet_family<W: Write>(s: &Scrape, f: &Family, w: &mut Out<W>) -> io::Result<()> {
    let kind = header_kind(f.kind);
    let mut started = false;
    for sn in s.snap.subnets.iter() {
        let r = subnet_row(s, sn);
        let Some(v) = read_at(f.column, f.table, &r) else {
            continue;
        };
        let unix = match (f.scale, &v) {
            (Scale::UnixSeconds, Value::TimeTicks(t)) if *t != 0 => {
                let (Some(taken_unix), Some(taken)) = (s.taken_unix, s.snap.taken) else {
                    continue;
                };
                let ago = f64::from(timestamp(Some(taken)).saturating_sub(*t)) / 100.0;
                Some(taken_unix - ago)
            }
            (Scale::UnixSeconds, _) => continue,
            _ => None,
        };
        w.sample(f, kind, &mut started)?;
        let l = &mut w.line;
        l.push(b'{');
        push_info_labels(l, &SUBNET_LABELS[..1], &r, true);
        l.extend_from_slice(b"} ");
        let shown = match unix {
            Some(t) => {
                let _ = write!(l, "{t:.3}");
                true
            }
            None => push_value(l, &v, f.scale),
        };
        if shown {
            l.push(b'\n');
            w.out.write_all(l)?;
        }
    }
    Ok(())
}

/// The row of the agent's scalars.
fn scalar_row<'a>(s: &'a Scrape) -> Row<'a> {
    Row {
        snap: s.snap,
        endpoint: s.endpoint,
        node: None,
        port: None,
        subnet: None,
        plan: None,
        index: RowIndex::node(Guid(0)),
        port_select: 0,
        now: s.now,
    }
}

fn agent_family<W: Write>(s: &Scrape, f: &Family, w: &mut Out<W>) -> io::Result<()> {
    let Some(v) = read_at(f.column, f.table, &scalar_row(s)) else {
        return Ok(());
    };
    let kind = header_kind(f.kind);
    w.header(&f.name, kind, &f.help)?;
    let l = &mut w.line;
    l.clear();
    l.extend_from_slice(f.name.as_bytes());
    l.extend_from_slice(sample_suffix(kind).as_bytes());
    l.push(b' ');
    if push_value(l, &v, f.scale) {
        l.push(b'\n');
        w.out.write_all(l)?;
    }
    Ok(())
}

/// The agent's build info series (its version, pmAgentVersion), then its
/// figures that are no MIB column: the time of the snapshot, the sweep
/// interval and the metrics endpoint's own counters.
fn agent_extras<W: Write>(s: &Scrape, w: &mut Out<W>) -> io::Result<()> {
    w.header(BUILD_INFO.0, HeaderKind::Info, BUILD_INFO.1)?;
    let l = &mut w.line;
    l.clear();
    l.extend_from_slice(BUILD_INFO.0.as_bytes());
    l.extend_from_slice(b"_info{");
    push_info_labels(l, &BUILD_LABELS[..], &scalar_row(s), true);
    l.extend_from_slice(b"} 1\n");
    w.out.write_all(l)?;
    if let Some(t) = s.taken_unix {
        w.header(
            "infiniband_agent_last_publication_timestamp_seconds",
            HeaderKind::Gauge,
            "When the snapshot this scrape shows was published (Unix time).",
        )?;
        writeln!(
            w.out,
            "infiniband_agent_last_publication_timestamp_seconds {t:.3}"
        )?;
    }
    w.header(
        "infiniband_agent_sweep_interval_seconds",
        HeaderKind::Gauge,
        "The configured time from one sweep's start to the next.",
    )?;
    writeln!(
        w.out,
        "infiniband_agent_sweep_interval_seconds {:.3}",
        s.snap.interval.as_secs_f64()
    )?;
    let h = s.http.figures();
    w.header(
        "infiniband_agent_metrics_requests",
        HeaderKind::Counter,
        "HTTP requests the metrics endpoint answered with metrics.",
    )?;
    writeln!(
        w.out,
        "infiniband_agent_metrics_requests_total {}",
        h.scrapes
    )?;
    let snmp = s.endpoint.refused.figures();
    for (edge, refused) in [(Edge::Http, h.refused), (Edge::Snmp, snmp)] {
        let name = format!("infiniband_agent_{}_refused", edge.name());
        w.header(&name, HeaderKind::Counter, edge.refused_help())?;
        for (reason, n) in refused.by_label(edge) {
            writeln!(w.out, "{name}_total{{reason=\"{reason}\"}} {n}")?;
        }
    }
    Ok(())
}

pub(crate) mod events;
pub(crate) mod health;
#[cfg(test)]
mod tests;
