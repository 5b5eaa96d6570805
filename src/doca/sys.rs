//! The run-time loaded edge to NVIDIA's DOCA libraries: the C functions
//! the agent uses, bound by `dlopen`/`dlsym` (libloading), and safe
//! wrappers around them. Every `unsafe` block of the DOCA backend is in
//! this module.
//!
//! Written from DOCA's public API documentation (doca_devinfo_*, doca_dev_*
//! and doca_telemetry_diag_*): only the functions used are bound, each
//! with the signature the documentation gives. All of them return a
//! `doca_error_t` (a C enum: `i32`).

use std::ffi::{c_char, c_void};
use std::fmt;
use std::sync::Arc;

use libloading::Library;

use super::decode::{OutputFormat, QueryStatus, TimestampSource};

/// `doca_error_t` values the agent tells apart.
pub mod code {
    pub const SUCCESS: i32 = 0;
    pub const IN_USE: i32 = 3;
    pub const NOT_SUPPORTED: i32 = 4;
    pub const NOT_FOUND: i32 = 16;
    pub const OPERATING_SYSTEM: i32 = 20;
    pub const DRIVER: i32 = 21;
    pub const BAD_CONFIG: i32 = 29;
    pub const SKIPPED: i32 = 30;

    /// The name of a `doca_error_t` (DOCA's own spelling).
    pub fn name(c: i32) -> &'static str {
        const NAMES: [&str; 32] = [
            "DOCA_SUCCESS",
            "DOCA_ERROR_UNKNOWN",
            "DOCA_ERROR_NOT_PERMITTED",
            "DOCA_ERROR_IN_USE",
            "DOCA_ERROR_NOT_SUPPORTED",
            "DOCA_ERROR_AGAIN",
            "DOCA_ERROR_INVALID_VALUE",
            "DOCA_ERROR_NO_MEMORY",
            "DOCA_ERROR_INITIALIZATION",
            "DOCA_ERROR_TIME_OUT",
            "DOCA_ERROR_SHUTDOWN",
            "DOCA_ERROR_CONNECTION_RESET",
            "DOCA_ERROR_CONNECTION_ABORTED",
            "DOCA_ERROR_CONNECTION_INPROGRESS",
            "DOCA_ERROR_NOT_CONNECTED",
            "DOCA_ERROR_NO_LOCK",
            "DOCA_ERROR_NOT_FOUND",
            "DOCA_ERROR_IO_FAILED",
            "DOCA_ERROR_BAD_STATE",
            "DOCA_ERROR_UNSUPPORTED_VERSION",
            "DOCA_ERROR_OPERATING_SYSTEM",
            "DOCA_ERROR_DRIVER",
            "DOCA_ERROR_UNEXPECTED",
            "DOCA_ERROR_ALREADY_EXIST",
            "DOCA_ERROR_FULL",
            "DOCA_ERROR_EMPTY",
            "DOCA_ERROR_IN_PROGRESS",
            "DOCA_ERROR_TOO_BIG",
            "DOCA_ERROR_AUTHENTICATION",
            "DOCA_ERROR_BAD_CONFIG",
            "DOCA_ERROR_SKIPPED",
            "DOCA_ERROR_DEVICE_FATAL_ERROR",
        ];
        usize::try_from(c)
            .ok()
            .and_then(|i| NAMES.get(i))
            .copied()
            .unwrap_or("unknown doca_error_t")
    }
}

/// A DOCA call that did not return DOCA_SUCCESS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallError {
    pub call: &'static str,
    pub code: i32,
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} returned {} ({})",
            self.call,
            code::name(self.code),
            self.code
        )
    }
}

impl std::error::Error for CallError {}

/// The libraries could not be loaded or lack a function.
#[derive(Debug)]
pub enum LoadError {
    /// No library file of that name could be opened.
    Open { library: String, error: String },
    /// None of the libraries exports the function.
    Symbol { name: &'static str },
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Open { library, error } if error.contains(library.as_str()) => {
                f.write_str(error)
            }
            LoadError::Open { library, error } => write!(f, "cannot load {library}: {error}"),
            LoadError::Symbol { name } => {
                write!(f, "the DOCA libraries loaded do not export {name}")
            }
        }
    }
}

impl std::error::Error for LoadError {}

// Opaque C types: only pointers to them cross the edge.
#[repr(C)]
struct DevInfo {
    _p: [u8; 0],
}
#[repr(C)]
struct Dev {
    _p: [u8; 0],
}
#[repr(C)]
struct DiagCtx {
    _p: [u8; 0],
}

/// `DOCA_DEVINFO_IBDEV_NAME_SIZE`.
const IBDEV_NAME_SIZE: usize = 64;

/// The bound functions: one `fn` pointer type per function, named as in
/// the C API, loaded by [`Doca::load`].
macro_rules! doca_fns {
    ($($field:ident = $sym:literal : fn($($arg:ty),*);)+) => {
        /// Each bound function's C name, by its field's name.
        #[allow(non_upper_case_globals)]
        mod c_name {
            $(pub const $field: &str = $sym;)+
        }

        struct Fns {
            $($field: unsafe extern "C" fn($($arg),*) -> i32,)+
        }

        impl Fns {
            fn load(libs: &[Library]) -> Result<Fns, LoadError> {
                Ok(Fns {
                    $($field: {
                        let mut found = None;
                        for lib in libs {
                            // SAFETY: the symbol is one of DOCA's C
                            // functions, whose documented signature is the
                            // fn type this field has; the pointer is used
                            // only while `libs` (kept in `Doca`) is loaded.
                            if let Ok(s) = unsafe {
                                lib.get::<unsafe extern "C" fn($($arg),*) -> i32>(
                                    concat!($sym, "\0").as_bytes(),
                                )
                            } {
                                found = Some(*s);
                                break;
                            }
                        }
                        found.ok_or(LoadError::Symbol { name: c_name::$field })?
                    },)+
                })
            }
        }
    };
}

/// Calls the bound function `name` of `fns` and [`check`]s what it
/// returns, naming it as in C. Unsafe as the call is.
macro_rules! call {
    ($fns:expr, $name:ident($($arg:expr),* $(,)?)) => {
        check(c_name::$name, ($fns.$name)($($arg),*))
    };
}

doca_fns! {
    devinfo_create_list = "doca_devinfo_create_list": fn(*mut *mut *mut DevInfo, *mut u32);
    devinfo_destroy_list = "doca_devinfo_destroy_list": fn(*mut *mut DevInfo);
    devinfo_get_ibdev_name = "doca_devinfo_get_ibdev_name": fn(*const DevInfo, *mut c_char, u32);
    dev_open = "doca_dev_open": fn(*mut DevInfo, *mut *mut Dev);
    dev_close = "doca_dev_close": fn(*mut Dev);
    cap_is_supported = "doca_telemetry_diag_cap_is_supported": fn(*const DevInfo);
    create = "doca_telemetry_diag_create": fn(*mut Dev, u8, *mut *mut DiagCtx);
    destroy = "doca_telemetry_diag_destroy": fn(*mut DiagCtx);
    set_output_format = "doca_telemetry_diag_set_output_format": fn(*mut DiagCtx, i32);
    set_sample_period = "doca_telemetry_diag_set_sample_period": fn(*mut DiagCtx, u64);
    set_sample_mode = "doca_telemetry_diag_set_sample_mode": fn(*mut DiagCtx, i32);
    set_data_timestamp_source = "doca_telemetry_diag_set_data_timestamp_source": fn(*mut DiagCtx, i32);
    set_log_max_num_samples = "doca_telemetry_diag_set_log_max_num_samples": fn(*mut DiagCtx, u8);
    set_max_num_data_ids = "doca_telemetry_diag_set_max_num_data_ids": fn(*mut DiagCtx, u32);
    apply_config = "doca_telemetry_diag_apply_config": fn(*mut DiagCtx);
    check_data_id = "doca_telemetry_diag_check_data_id": fn(*mut DiagCtx, u64);
    apply_counters = "doca_telemetry_diag_apply_counters_list_by_id": fn(*mut DiagCtx, *const u64, u32, *mut u64);
    start = "doca_telemetry_diag_start": fn(*mut DiagCtx);
    stop = "doca_telemetry_diag_stop": fn(*mut DiagCtx);
    get_sample_size = "doca_telemetry_diag_get_sample_size": fn(*mut DiagCtx, *mut u32);
    query_counters = "doca_telemetry_diag_query_counters": fn(*mut DiagCtx, *mut c_void, u32, *mut u32);
}

/// The loaded DOCA libraries.
pub struct Doca {
    fns: Fns,
    // Declared after `fns`: the libraries are unloaded after the pointers
    // into them are gone.
    _libs: Vec<Library>,
}

fn check(call: &'static str, rc: i32) -> Result<(), CallError> {
    if rc == code::SUCCESS {
        Ok(())
    } else {
        Err(CallError { call, code: rc })
    }
}

/// What opening a device's telemetry diag context needs.
#[derive(Clone, Debug)]
pub struct DiagConfig {
    pub force_ownership: bool,
    pub format: OutputFormat,
    pub timestamps: TimestampSource,
    pub sample_period_ns: u64,
    pub log_max_num_samples: u8,
    pub max_num_data_ids: u32,
}

impl Doca {
    /// Load `libraries` (file names found through the dynamic linker's
    /// search path, or paths) and bind every function from the first
    /// library that exports it.
    pub fn load(libraries: &[String]) -> Result<Arc<Doca>, LoadError> {
        let mut libs = Vec::new();
        for name in libraries {
            // SAFETY: loading a shared library runs its initialisers; the
            // libraries named are DOCA's (or the configured stand-in),
            // whose initialisers have no preconditions on this process.
            let lib = unsafe { Library::new(name) }.map_err(|e| LoadError::Open {
                library: name.clone(),
                // dlerror()'s text is the source; it names the file.
                error: std::error::Error::source(&e)
                    .map_or_else(|| e.to_string(), |s| s.to_string()),
            })?;
            libs.push(lib);
        }
        let fns = Fns::load(&libs)?;
        Ok(Arc::new(Doca { fns, _libs: libs }))
    }

    /// The ibdev names (`mlx5_0`) of every device DOCA lists.
    pub fn devices(&self) -> Result<Vec<String>, CallError> {
        self.with_devinfo_list(|list| {
            Ok(list
                .iter()
                .filter_map(|&d| self.ibdev_name(d).ok())
                .collect())
        })
    }

    /// Run `f` over the device list; the list is destroyed afterwards.
    fn with_devinfo_list<T>(
        &self,
        f: impl FnOnce(&[*mut DevInfo]) -> Result<T, CallError>,
    ) -> Result<T, CallError> {
        let mut list: *mut *mut DevInfo = std::ptr::null_mut();
        let mut n: u32 = 0;
        // SAFETY: both out-pointers point at live locals of the types the
        // function writes.
        unsafe { call!(self.fns, devinfo_create_list(&mut list, &mut n)) }?;
        if list.is_null() {
            return f(&[]);
        }
        // SAFETY: on success the library returned an array of `n` devinfo
        // pointers that stays valid until doca_devinfo_destroy_list.
        let slice = unsafe { std::slice::from_raw_parts(list, n as usize) };
        let r = f(slice);
        // SAFETY: `list` came from doca_devinfo_create_list and is
        // destroyed once; `slice` is not used after this.
        unsafe { (self.fns.devinfo_destroy_list)(list) };
        r
    }

    fn ibdev_name(&self, d: *mut DevInfo) -> Result<String, CallError> {
        let mut buf = [0u8; IBDEV_NAME_SIZE];
        // SAFETY: `d` is an element of a live device list; `buf` has the
        // size passed, which is DOCA_DEVINFO_IBDEV_NAME_SIZE.
        unsafe {
            call!(
                self.fns,
                devinfo_get_ibdev_name(d, buf.as_mut_ptr().cast(), buf.len() as u32)
            )
        }?;
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        Ok(String::from_utf8_lossy(&buf[..end]).into_owned())
    }

    /// Open device `ibdev` and create its telemetry diag context,
    /// configured and started with `ids` applied. A data ID the device
    /// rejects is left out (`Started::rejected`), as the guide advises.
    pub fn start_diag(
        self: &Arc<Doca>,
        ibdev: &str,
        cfg: &DiagConfig,
        ids: &[u64],
    ) -> Result<Started, OpenError> {
        let dev = self
            .with_devinfo_list(|list| {
                for &d in list {
                    if self.ibdev_name(d).ok().as_deref() != Some(ibdev) {
                        continue;
                    }
                    // SAFETY: `d` is an element of the live list.
                    unsafe { call!(self.fns, cap_is_supported(d)) }?;
                    let mut dev: *mut Dev = std::ptr::null_mut();
                    // SAFETY: `d` is live; `dev` is a local out-pointer.
                    // The opened device does not depend on the list.
                    unsafe { call!(self.fns, dev_open(d, &mut dev)) }?;
                    return Ok(Some(dev));
                }
                Ok(None)
            })
            .map_err(OpenError::Call)?
            .ok_or(OpenError::NoSuchDevice)?;
        let mut ctx: *mut DiagCtx = std::ptr::null_mut();
        // SAFETY: `dev` was opened above; `ctx` is a local out-pointer.
        if let Err(e) = unsafe {
            call!(
                self.fns,
                create(dev, u8::from(cfg.force_ownership), &mut ctx)
            )
        } {
            // SAFETY: `dev` was opened above and nothing else holds it.
            unsafe { (self.fns.dev_close)(dev) };
            return Err(OpenError::Call(e));
        }
        // From here on `diag`'s Drop stops and destroys the context and
        // closes the device.
        let mut diag = Diag {
            doca: Arc::clone(self),
            dev,
            ctx,
            sample_size: 0,
        };
        let f = &self.fns;
        // SAFETY: (every call below) `ctx` is the live context created
        // above, owned by `diag`; the arguments are plain values.
        unsafe {
            call!(f, set_output_format(ctx, cfg.format as i32))?;
            call!(f, set_sample_period(ctx, cfg.sample_period_ns))?;
            // Repetitive: the device keeps sampling, the oldest samples
            // are overwritten when the buffer is full.
            call!(f, set_sample_mode(ctx, 1))?;
            call!(f, set_data_timestamp_source(ctx, cfg.timestamps as i32))?;
            call!(f, set_log_max_num_samples(ctx, cfg.log_max_num_samples))?;
            call!(f, set_max_num_data_ids(ctx, cfg.max_num_data_ids))?;
            call!(f, apply_config(ctx))?;
        }
        let mut applied = Vec::with_capacity(ids.len());
        let mut rejected = Vec::new();
        for &id in ids {
            // SAFETY: `ctx` is live and configured.
            match unsafe { call!(f, check_data_id(ctx, id)) } {
                Ok(()) => applied.push(id),
                Err(e) if matches!(e.code, code::NOT_SUPPORTED | code::BAD_CONFIG) => {
                    rejected.push((id, e))
                }
                Err(e) => return Err(OpenError::Call(e)),
            }
        }
        // The device may still refuse an ID when the list is applied: it
        // names the first faulty one; leave it out and try again.
        loop {
            if applied.is_empty() {
                return Err(OpenError::NothingApplied { rejected });
            }
            let mut failed: u64 = 0;
            // SAFETY: `applied` holds `applied.len()` IDs and outlives the
            // call; `failed` is a local out-pointer.
            let rc = unsafe {
                (f.apply_counters)(ctx, applied.as_ptr(), applied.len() as u32, &mut failed)
            };
            match check(c_name::apply_counters, rc) {
                Ok(()) => break,
                Err(e) => match applied.iter().position(|&i| i == failed) {
                    Some(k) if failed != 0 => rejected.push((applied.remove(k), e)),
                    _ => return Err(OpenError::Call(e)),
                },
            }
        }
        // SAFETY: `ctx` is live, configured and has IDs applied.
        unsafe { call!(f, start(ctx)) }?;
        let mut size: u32 = 0;
        // SAFETY: `ctx` is started; `size` is a local out-pointer.
        unsafe { call!(f, get_sample_size(ctx, &mut size)) }?;
        diag.sample_size = size as usize;
        Ok(Started {
            diag,
            applied,
            rejected,
        })
    }
}

/// Why a device's context could not be started.
#[derive(Debug)]
pub enum OpenError {
    /// DOCA does not list the device.
    NoSuchDevice,
    Call(CallError),
    /// The device rejected every data ID.
    NothingApplied {
        rejected: Vec<(u64, CallError)>,
    },
}

impl From<CallError> for OpenError {
    fn from(e: CallError) -> Self {
        OpenError::Call(e)
    }
}

/// A started context, the data IDs it samples (in order) and those the
/// device rejected.
pub struct Started {
    pub diag: Diag,
    pub applied: Vec<u64>,
    pub rejected: Vec<(u64, CallError)>,
}

/// A started telemetry diag context on an open device. Dropping it stops
/// and destroys the context and closes the device.
pub struct Diag {
    doca: Arc<Doca>,
    dev: *mut Dev,
    ctx: *mut DiagCtx,
    sample_size: usize,
}

// SAFETY: the context and device handles are used by one thread at a
// time (`&mut self` for every call); DOCA does not tie them to the thread
// that created them.
unsafe impl Send for Diag {}

impl Diag {
    /// The size of one sample, as the library gave it.
    pub fn sample_size(&self) -> usize {
        self.sample_size
    }

    /// Read up to `buf.len() / sample_size` new samples into `buf`.
    /// Returns how many are valid and whether samples were dropped before
    /// them.
    pub fn query(&mut self, buf: &mut [u8]) -> Result<(u32, QueryStatus), CallError> {
        if self.sample_size == 0 {
            return Ok((0, QueryStatus::Complete));
        }
        let max = u32::try_from(buf.len() / self.sample_size).unwrap_or(u32::MAX);
        let mut n: u32 = 0;
        // SAFETY: `ctx` is started; `buf` holds `max` samples of the size
        // the library gave, so the library writes inside it; `n` is a
        // local out-pointer.
        let rc = unsafe {
            (self.doca.fns.query_counters)(self.ctx, buf.as_mut_ptr().cast(), max, &mut n)
        };
        let status = match rc {
            code::SUCCESS => QueryStatus::Complete,
            code::SKIPPED => QueryStatus::Dropped,
            c => {
                return Err(CallError {
                    call: c_name::query_counters,
                    code: c,
                });
            }
        };
        // Never trust a count larger than what was asked for.
        Ok((n.min(max), status))
    }
}

impl Drop for Diag {
    fn drop(&mut self) {
        let f = &self.doca.fns;
        // SAFETY: `ctx` and `dev` are live and owned by this value; each is
        // released once, the context (stopped first) before the device.
        // Stop may say there is nothing to stop (a context that failed
        // before its configuration was applied): that is fine.
        unsafe {
            (f.stop)(self.ctx);
            (f.destroy)(self.ctx);
            (f.dev_close)(self.dev);
        }
    }
}
