//! ibpm-agentx: an AgentX subagent that serves IB-PM-MIB for every node of an
//! InfiniBand fabric from a cache filled by Performance Management MADs.
//!
//! Data flow (see `docs/design.md`): transport (MADs) -> `pm` (attribute codecs) ->
//! `fabric` (discovery, sweeper, cache snapshots) -> `mib` (OID tree) ->
//! `agentx` (codec + session to snmpd) and `snmp` (built-in v2c responder).

/// An enum of wire codes: the enum with its discriminants, `ALL` (every
/// variant in the table's order), and the lookup from a code (`None` for a
/// code the enum does not name). Where every row also gives the name its
/// standard spells it (`OpenFailed = 256 => "openFailed",`), `name()`
/// returns it. Where the header names a column after the lookup
/// (`enum PduType: u8, from_u8, has_context: bool`), every row gives its
/// value after the code (`Register = 3, true,`), so that no row can leave
/// it out, and the method of that name returns it.
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident: $int:ty, $from:ident {
            $($(#[$vmeta:meta])* $variant:ident = $code:literal => $text:literal,)+
        }
    ) => {
        wire_enum! {
            $(#[$meta])*
            $vis enum $name: $int, $from,
                /// The name its standard gives it.
                name: &'static str {
                $($(#[$vmeta])* $variant = $code, $text,)+
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident: $int:ty, $from:ident, $(#[$cmeta:meta])* $col:ident: $cty:ty {
            $($(#[$vmeta:meta])* $variant:ident = $code:literal, $val:expr,)+
        }
    ) => {
        wire_enum! {
            $(#[$meta])*
            $vis enum $name: $int, $from {
                $($(#[$vmeta])* $variant = $code,)+
            }
        }

        impl $name {
            $(#[$cmeta])*
            pub const fn $col(self) -> $cty {
                match self {
                    $($name::$variant => $val,)+
                }
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident: $int:ty, $from:ident {
            $($(#[$vmeta:meta])* $variant:ident = $code:literal,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr($int)]
        $vis enum $name {
            $($(#[$vmeta])* $variant = $code,)+
        }

        impl $name {
            /// Every variant, in the table's order.
            pub const ALL: [$name; [$(stringify!($variant)),+].len()] = [$($name::$variant),+];

            /// The variant a wire code names.
            pub fn $from(v: $int) -> Option<$name> {
                match v {
                    $($code => Some($name::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

/// Counters many threads bump (relaxed atomics) and the plain struct of
/// their values, from one list of fields: `snapshot()` reads each.
macro_rules! atomic_counters {
    (
        $(#[$cmeta:meta])*
        $cvis:vis struct $counters:ident: $atomic:ty;
        $(#[$fmeta:meta])*
        $fvis:vis struct $figures:ident: $int:ty {
            $($(#[$m:meta])* $field:ident,)+
        }
    ) => {
        $(#[$cmeta])*
        #[derive(Debug, Default)]
        $cvis struct $counters {
            $($(#[$m])* pub $field: $atomic,)+
        }

        $(#[$fmeta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        $fvis struct $figures {
            $($(#[$m])* pub $field: $int,)+
        }

        impl $counters {
            /// Every counter's value (each read on its own).
            pub fn snapshot(&self) -> $figures {
                $figures {
                    $($field: self.$field.load(std::sync::atomic::Ordering::Relaxed),)+
                }
            }
        }
    };
}

pub mod agentx;
pub mod app;
pub mod cabling;
pub mod checkup;
pub mod config;
pub mod doca;
pub mod edge;
pub mod events;
pub mod fabric;
pub mod files;
pub mod health;
pub mod heap;
pub mod ib;
pub mod metrics;
pub mod mib;
pub mod notify;
#[macro_use]
pub mod pm;
pub mod query;
#[cfg(any(test, feature = "rig"))]
pub mod rig;
pub mod runtime;
pub mod service;
pub mod sim;
pub mod smp;
pub mod snmp;
pub mod time;
pub mod transport;
