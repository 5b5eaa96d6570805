//! The DOCA backend's driver: checks what telemetry diag needs (library,
//! fwctl, firmware, ownership), starts one context per device, and runs
//! one thread that reads the samples every sample period and folds them
//! into the shared state. SNMP requests never wait on it: they read the
//! published snapshot.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tracing::{info, warn};

use super::DATA_IDS;
use super::decode::{Layout, OutputFormat, QueryStatus, TimestampSource};
use super::local::{self, IbDev};
use super::sys::{CallError, DiagConfig, Doca, OpenError, code};
use crate::config::{DocaSection, DocaTimestamps};
use crate::fabric::cache::Cache;
use crate::fabric::state::SharedState;
use crate::ib::{Guid, Node};
use crate::time::{Due, Throttle};

/// A port's values in one sample: (node GUID, port, [(index into
/// [`DATA_IDS`], value)]).
type PortValues = (Guid, u8, Vec<(usize, u64)>);

/// The most bytes one read of a device's samples may use.
const MAX_BUFFER: usize = 1 << 20;

/// One started device: its context, how to read its samples and which
/// (node GUID, port) each local port is.
struct Device {
    ibdev: String,
    diag: super::sys::Diag,
    layout: Layout,
    /// Per applied data ID: (index into [`DATA_IDS`], node GUID, port).
    targets: Vec<(usize, Guid, u8)>,
    buf: Vec<u8>,
    /// Failed reads since the last good one: the first is logged.
    failing: Throttle,
    /// Reads that found samples dropped before the agent read them: the
    /// 1st, 2nd, 4th ... are logged.
    dropped: Throttle,
}

/// The started contexts, ready to be read by [`DocaSampler::spawn`].
pub struct DocaSampler {
    devices: Vec<Device>,
    period: Duration,
    bits: u32,
}

/// What the DOCA backend found: the local nodes it serves, the ports it
/// fills, and the sampler.
pub struct Opened {
    pub nodes: Vec<Node>,
    pub ports: Vec<(Guid, u8)>,
    pub sampler: DocaSampler,
}

/// The one line a user reads when DOCA cannot be used.
fn fwctl_missing(dir: &Path, why: &str) -> String {
    format!(
        "DOCA telemetry diag needs the fwctl driver, but {} {why}: load it with \
         `sudo modprobe mlx5_fwctl` (it ships with the DOCA host package)",
        dir.display()
    )
}

fn check_fwctl(dir: &Path) -> Result<(), String> {
    match std::fs::read_dir(dir) {
        Err(_) => Err(fwctl_missing(dir, "does not exist")),
        Ok(mut d) => match d.next() {
            None => Err(fwctl_missing(dir, "is empty")),
            Some(_) => Ok(()),
        },
    }
}

/// Explain a failed start of device `ibdev` in one line.
fn explain(ibdev: &str, e: &OpenError, cfg: &DocaSection) -> String {
    match e {
        OpenError::NoSuchDevice => format!("DOCA does not list device {ibdev}"),
        OpenError::NothingApplied { rejected } => format!(
            "{ibdev}: the device rejected every data ID the agent samples (first: {} {})",
            rejected
                .first()
                .map_or(String::new(), |r| super::describe(r.0)),
            rejected.first().map_or(String::new(), |r| r.1.to_string()),
        ),
        OpenError::Call(CallError { call, code: c }) => match (*call, *c) {
            ("doca_telemetry_diag_create", code::IN_USE) if !cfg.force_ownership => format!(
                "{ibdev}: the diagnostic counters are owned by another telemetry user \
                 (set doca.force_ownership = true to take them over)"
            ),
            ("doca_telemetry_diag_create", code::IN_USE) => format!(
                "{ibdev}: the diagnostic counters are owned by another telemetry user and \
                 cannot be taken over (multi-domain devices ignore force_ownership: \
                 another domain must be released)"
            ),
            ("doca_telemetry_diag_cap_is_supported", code::NOT_SUPPORTED) => format!(
                "{ibdev}: the device does not support telemetry diag: its firmware is too old \
                 (ConnectX-7, BlueField-3 and ConnectX-8 need 28/32/40.43.1000 or newer) \
                 or it is not such a device"
            ),
            ("doca_telemetry_diag_cap_is_supported", code::NOT_FOUND) => format!(
                "{ibdev}: no fwctl device belongs to it: load the fwctl driver \
                 (`sudo modprobe mlx5_fwctl`)"
            ),
            (_, code::OPERATING_SYSTEM) => format!(
                "{ibdev}: {} (no permission to use the device's fwctl node?)",
                CallError { call, code: *c }
            ),
            _ => format!("{ibdev}: {}", CallError { call, code: *c }),
        },
    }
}

/// Check the requirements, load the library and start a context on every
/// configured device. Every error is one line saying what is missing.
pub fn open(cfg: &DocaSection) -> Result<Opened, String> {
    let files = cfg.library_files();
    let doca = Doca::load(&files).map_err(|e| {
        format!(
            "DOCA is not installed ({e}): install the DOCA host package \
             (doca-all, DOCA 2.9 or newer) or set doca.libraries"
        )
    })?;
    check_fwctl(&cfg.fwctl)?;
    let listed = doca
        .devices()
        .map_err(|e| format!("DOCA cannot list devices: {e}"))?;
    let all: Vec<IbDev> = local::list(&cfg.sysfs)
        .iter()
        .filter_map(|n| local::read_dev(&cfg.sysfs, n).ok())
        .collect();
    let by_name = |n: &str| all.iter().find(|d| d.name == n);
    let chosen: Vec<String> = if cfg.devices.is_empty() {
        listed
            .iter()
            .filter(|n| {
                by_name(n)
                    .and_then(|d| d.pci.as_deref())
                    .and_then(local::pci_slot)
                    .is_none_or(|(_, f)| f == 0)
            })
            .cloned()
            .collect()
    } else {
        for d in &cfg.devices {
            if !listed.contains(d) {
                return Err(format!(
                    "doca.devices names {d}, but DOCA lists {}",
                    if listed.is_empty() {
                        "no device".to_string()
                    } else {
                        listed.join(", ")
                    }
                ));
            }
        }
        cfg.devices.clone()
    };
    if chosen.is_empty() {
        return Err(
            "DOCA lists no device to sample (a ConnectX-7, BlueField-3, ConnectX-8 or later \
             adapter is needed)"
                .into(),
        );
    }
    let format = OutputFormat::from_code(cfg.output_format).unwrap_or(OutputFormat::Values64);
    let timestamps = match cfg.timestamp_source {
        DocaTimestamps::Frc => TimestampSource::Frc,
        DocaTimestamps::Rtc => TimestampSource::Rtc,
    };
    let mut devices = Vec::new();
    let mut nodes: Vec<Node> = Vec::new();
    let mut ports = Vec::new();
    for ibdev in &chosen {
        let dev = by_name(ibdev).ok_or_else(|| {
            format!(
                "{ibdev}: not in {} (no node GUID to serve it under)",
                cfg.sysfs.join("class/infiniband").display()
            )
        })?;
        local::check_firmware(&dev.fw_ver).map_err(|e| format!("{ibdev}: {e}"))?;
        let locals = local::local_ports(dev, &all);
        let ids: Vec<u64> = locals
            .iter()
            .flat_map(|&(lp, _, _)| DATA_IDS.iter().map(move |d| d.for_port(lp)))
            .collect();
        let dcfg = DiagConfig {
            force_ownership: cfg.force_ownership,
            format,
            timestamps,
            sample_period_ns: cfg.sample_period.as_nanos().min(u128::from(u64::MAX)) as u64,
            log_max_num_samples: cfg.log_max_samples,
            max_num_data_ids: ids.len() as u32,
        };
        let started = doca
            .start_diag(ibdev, &dcfg, &ids)
            .map_err(|e| explain(ibdev, &e, cfg))?;
        for (id, e) in &started.rejected {
            warn!(
                "{ibdev}: the device does not sample this data ID, {}: its column stays empty for that port ({e})",
                super::describe(*id)
            );
        }
        let layout = Layout::new(
            format,
            timestamps,
            started.applied.clone(),
            started.diag.sample_size(),
        )
        .map_err(|e| format!("{ibdev}: {e}"))?;
        if layout.sample_size > MAX_BUFFER {
            return Err(format!(
                "{ibdev}: the library reports samples of {} bytes, more than the {MAX_BUFFER} \
                 the agent reads at once",
                layout.sample_size
            ));
        }
        let samples = (1usize << cfg.log_max_samples).min(MAX_BUFFER / layout.sample_size.max(1));
        let targets = started
            .applied
            .iter()
            .map(|&id| {
                let (d, lp) = super::lookup(id).unwrap_or((&DATA_IDS[0], 0));
                let i = DATA_IDS.iter().position(|x| x.base == d.base).unwrap_or(0);
                let (_, g, p) = locals
                    .iter()
                    .copied()
                    .find(|(l, _, _)| *l == lp)
                    .unwrap_or((0, Guid(0), 0));
                (i, g, p)
            })
            .collect();
        for &(lp, g, p) in &locals {
            ports.push((g, p));
            if !nodes.iter().any(|n| n.id.guid == g)
                && let Some(d) = all.iter().find(|d| d.node_guid == g)
            {
                nodes.push(local::node(d));
            }
            info!("DOCA telemetry diag serves port {p} of node {g} ({ibdev} local port {lp})");
        }
        info!(
            "DOCA telemetry diag sampling {ibdev}: {} data IDs every {} us, {} bytes a sample",
            started.applied.len(),
            cfg.sample_period.as_micros(),
            layout.sample_size
        );
        devices.push(Device {
            ibdev: ibdev.clone(),
            diag: started.diag,
            buf: vec![0u8; samples.max(1) * layout.sample_size],
            layout,
            targets,
            failing: Throttle::once(),
            dropped: Throttle::doubling(u64::MAX),
        });
    }
    Ok(Opened {
        nodes,
        ports,
        sampler: DocaSampler {
            devices,
            period: cfg.sample_period,
            bits: format.value_bits(),
        },
    })
}

impl DocaSampler {
    /// Read every device once and fold what arrived into `state`,
    /// publishing the nodes that changed.
    pub fn read_once(&mut self, state: &SharedState, cache: &Cache) {
        let bits = self.bits;
        for d in &mut self.devices {
            let (n, status) = match d.diag.query(&mut d.buf) {
                Ok(r) => r,
                Err(e) => {
                    if d.failing.count().is_some() {
                        warn!(
                            "DOCA telemetry diag read of {} failed ({e}); trying again each period",
                            d.ibdev
                        );
                    }
                    continue;
                }
            };
            if d.failing.total() > 0 {
                info!("DOCA telemetry diag reads {} again", d.ibdev);
                d.failing.reset();
            }
            let gap = status == QueryStatus::Dropped;
            if gap && let Some(Due { total: times, .. }) = d.dropped.count() {
                warn!(
                    "DOCA telemetry diag dropped samples before the agent read them, on {} {times} times so far \
                     (the totals keep counting; lower doca.sample_period_ms or raise doca.log_max_samples)",
                    d.ibdev
                );
            }
            let samples = match d.layout.decode(&d.buf, n) {
                Ok(s) => s,
                Err(e) => {
                    warn!(
                        "a DOCA sample buffer of {} was not understood ({e}); skipped",
                        d.ibdev
                    );
                    continue;
                }
            };
            let mut touched: Vec<usize> = Vec::new();
            let mut st = state.lock();
            for (k, s) in samples.iter().enumerate() {
                // Group the sample's values by port.
                let mut per_port: Vec<PortValues> = Vec::new();
                for (&(i, g, p), &v) in d.targets.iter().zip(&s.values) {
                    match per_port.iter_mut().find(|(pg, pp, _)| *pg == g && *pp == p) {
                        Some(e) => e.2.push((i, v)),
                        None => per_port.push((g, p, vec![(i, v)])),
                    }
                }
                for (g, p, vals) in per_port {
                    if let Some(ni) =
                        st.apply_doca(g, p, &vals, bits, gap && k == 0, Instant::now())
                        && !touched.contains(&ni)
                    {
                        touched.push(ni);
                    }
                }
            }
            for ni in touched {
                st.publish_node(cache, ni);
            }
            drop(st);
            state.published();
        }
    }

    /// Read every `period` until `shutdown` is set.
    pub fn spawn(
        mut self,
        state: SharedState,
        cache: Arc<Cache>,
        shutdown: Arc<AtomicBool>,
    ) -> std::io::Result<JoinHandle<()>> {
        std::thread::Builder::new()
            .name("doca sampler".into())
            .spawn(move || {
                let mut next = Instant::now();
                while !shutdown.load(Ordering::Relaxed) {
                    self.read_once(&state, &cache);
                    next += self.period;
                    let now = Instant::now();
                    if next < now {
                        next = now;
                    }
                    while !shutdown.load(Ordering::Relaxed) && Instant::now() < next {
                        std::thread::sleep(
                            next.saturating_duration_since(Instant::now())
                                .min(Duration::from_millis(100)),
                        );
                    }
                }
            })
    }
}
