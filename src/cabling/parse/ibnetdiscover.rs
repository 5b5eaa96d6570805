//! A plan in ibnetdiscover's format: the file the topology parser reads
//! (the agent's own `topology save`, ibnetdiscover's output, an ibsim
//! topology), as a plan by GUID. A link's width and speed are planned only
//! where both its ends state them (ibnetdiscover's `lid N 4xNDR` comment,
//! a `w=`/`s=` option, a `width=`/`speed=` line): the parser's defaults
//! (ibsim's 4x SDR) plan nothing.

use super::{PlanError, check_name};
use crate::ib::cabling::{NodeRef, Plan, PlanSource};
use crate::ib::topology;

/// Parse `text` (ibnetdiscover's format) as a plan.
pub fn parse(text: &str) -> Result<Plan, PlanError> {
    let (fabric, warnings, facts) =
        topology::parse_plan(text).map_err(|e| PlanError { what: "plan", ..e })?;
    for w in &warnings {
        tracing::warn!("plan <text>:{}: {}; not planned", w.line, w.reason);
    }
    let mut plan = Plan::from_fabric(&fabric, PlanSource::Ibnetdiscover);
    for n in &mut plan.nodes {
        if let NodeRef::Guid(g) = n.node {
            n.line = facts.nodes.get(&g).copied().unwrap_or(0);
        }
        if let Some(name) = &n.name {
            check_name(n.line as usize, name)?;
        }
    }
    for l in &mut plan.links {
        let NodeRef::Guid(g) = l.a.node else {
            continue;
        };
        let f = facts.ports.get(&(g, l.a.port)).copied().unwrap_or_default();
        l.line = f.line;
        if !f.width_stated {
            l.width = None;
        }
        if !f.speed_stated {
            l.speed = None;
        }
    }
    Ok(plan)
}
