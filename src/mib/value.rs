//! SNMP values as both AgentX (RFC 2741 5.4) and SNMPv2c carry them.

use super::oid::Oid;

/// A varbind value. The three exception values are only ever answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Integer(i32),
    OctetString(Vec<u8>),
    Null,
    ObjectIdentifier(Oid),
    IpAddress([u8; 4]),
    Counter32(u32),
    Gauge32(u32),
    TimeTicks(u32),
    Opaque(Vec<u8>),
    Counter64(u64),
    NoSuchObject,
    NoSuchInstance,
    EndOfMibView,
}

impl Value {
    /// The SMI type name, as error messages and tests show it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Integer(_) => "INTEGER",
            Value::OctetString(_) => "OCTET STRING",
            Value::Null => "NULL",
            Value::ObjectIdentifier(_) => "OBJECT IDENTIFIER",
            Value::IpAddress(_) => "IpAddress",
            Value::Counter32(_) => "Counter32",
            Value::Gauge32(_) => "Gauge32",
            Value::TimeTicks(_) => "TimeTicks",
            Value::Opaque(_) => "Opaque",
            Value::Counter64(_) => "Counter64",
            Value::NoSuchObject => "noSuchObject",
            Value::NoSuchInstance => "noSuchInstance",
            Value::EndOfMibView => "endOfMibView",
        }
    }

    /// True for noSuchObject / noSuchInstance / endOfMibView.
    pub fn is_exception(&self) -> bool {
        matches!(
            self,
            Value::NoSuchObject | Value::NoSuchInstance | Value::EndOfMibView
        )
    }
}

/// One variable binding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VarBind {
    pub name: Oid,
    pub value: Value,
}

impl VarBind {
    pub fn new(name: Oid, value: Value) -> Self {
        VarBind { name, value }
    }
}
