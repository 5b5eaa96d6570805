//! Basic authentication against the web configuration's bcrypt hashes.
//!
//! - Verification never truncates: a password of 72 octets or more is
//!   refused (bcrypt would compare its first 72 only).
//! - An unknown user is checked against a dummy hash of the highest cost
//!   among the users, so the time does not tell which users exist.
//! - A credential bcrypt accepted is remembered (keyed on the user, the
//!   hash and the password, as a SHA-256): a scrape costs one bcrypt check
//!   per credential, not per request. The least recently used goes first.
//! - bcrypt checks run two at once; beyond a bounded queue a request is
//!   answered busy at once instead of waiting behind a flood.
//! - The password a client sent is a [`Secret`]: wiped, never printed.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use hyper::header::HeaderValue;
use sha2::Digest;
use tokio::sync::Semaphore;

use crate::edge::Secret;
use crate::edge::head::basic_credentials;

/// bcrypt checks at once.
const CHECKS: usize = 2;
/// Requests waiting for a bcrypt check, at most (beyond: busy).
pub const QUEUE: usize = 8;
/// Accepted credentials remembered.
pub const REMEMBERED: usize = 64;

/// The least recently used of at most `cap` keys goes first.
#[derive(Debug)]
pub struct Lru {
    cap: usize,
    /// Most recently used last.
    keys: Vec<[u8; 32]>,
}

impl Lru {
    pub fn new(cap: usize) -> Lru {
        Lru {
            cap: cap.max(1),
            keys: Vec::new(),
        }
    }

    /// Whether `k` is remembered (and now the most recently used).
    pub fn hit(&mut self, k: &[u8; 32]) -> bool {
        match self.keys.iter().position(|x| x == k) {
            Some(i) => {
                let k = self.keys.remove(i);
                self.keys.push(k);
                true
            }
            None => false,
        }
    }

    pub fn insert(&mut self, k: [u8; 32]) {
        if self.hit(&k) {
            return;
        }
        if self.keys.len() >= self.cap {
            self.keys.remove(0);
        }
        self.keys.push(k);
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// What a request's credentials came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Accepted,
    Refused,
    /// The bcrypt queue is full.
    Busy,
}

/// The users and what checking them needs.
pub struct Auth {
    users: BTreeMap<String, String>,
    /// A hash of the highest cost, for unknown users.
    dummy: String,
    checks: Semaphore,
    /// Requests checking or waiting to.
    waiting: AtomicUsize,
    remembered: Mutex<Lru>,
}

/// The highest cost among `users`' hashes.
pub fn highest_cost(users: &BTreeMap<String, String>) -> Option<u32> {
    users
        .values()
        .filter_map(|h| h.parse::<bcrypt::HashParts>().ok())
        .map(|p| p.get_cost())
        .max()
}

impl Auth {
    pub fn new(users: BTreeMap<String, String>) -> Auth {
        let dummy = match highest_cost(&users) {
            Some(cost) => bcrypt::hash(b"not a password", cost).unwrap_or_default(),
            None => String::new(),
        };
        Auth {
            users,
            dummy,
            checks: Semaphore::new(CHECKS),
            waiting: AtomicUsize::new(0),
            remembered: Mutex::new(Lru::new(REMEMBERED)),
        }
    }

    /// Whether authentication is off (no users).
    pub fn is_off(&self) -> bool {
        self.users.is_empty()
    }

    /// The verdict on an Authorization header.
    pub async fn check(&self, h: Option<&HeaderValue>) -> Verdict {
        if self.is_off() {
            return Verdict::Accepted;
        }
        let Some((user, pass)) = h.and_then(basic_credentials) else {
            return Verdict::Refused;
        };
        let known = self.users.get(&user);
        let hash = known.unwrap_or(&self.dummy).clone();
        let mut d = sha2::Sha256::new();
        d.update(user.as_bytes());
        d.update([0]);
        d.update(hash.as_bytes());
        d.update([0]);
        d.update(pass.expose());
        let key: [u8; 32] = d.finalize().into();
        if known.is_some() && self.lock().hit(&key) {
            return Verdict::Accepted;
        }
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= CHECKS + QUEUE {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            return Verdict::Busy;
        }
        let ok = self.verify(pass, hash).await && known.is_some();
        self.waiting.fetch_sub(1, Ordering::AcqRel);
        if ok {
            self.lock().insert(key);
            Verdict::Accepted
        } else {
            Verdict::Refused
        }
    }

    async fn verify(&self, pass: Secret, hash: String) -> bool {
        let Ok(_permit) = self.checks.acquire().await else {
            return false;
        };
        tokio::task::spawn_blocking(move || {
            bcrypt::non_truncating_verify(pass.expose(), &hash).unwrap_or(false)
        })
        .await
        .unwrap_or(false)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Lru> {
        self.remembered.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    fn basic(user: &str, pass: &[u8]) -> HeaderValue {
        let mut raw = format!("{user}:").into_bytes();
        raw.extend_from_slice(pass);
        let b64 = base64::engine::general_purpose::STANDARD.encode(raw);
        HeaderValue::from_str(&format!("Basic {b64}")).unwrap()
    }

    #[test]
    fn the_least_recently_used_goes_first() {
        let mut l = Lru::new(2);
        l.insert([1; 32]);
        l.insert([2; 32]);
        assert!(l.hit(&[1; 32]));
        l.insert([3; 32]);
        assert!(l.hit(&[1; 32]) && l.hit(&[3; 32]));
        assert!(!l.hit(&[2; 32]), "2 was the least recently used");
        assert_eq!(l.len(), 2);
    }

    #[tokio::test]
    async fn long_passwords_are_refused_not_truncated() {
        let pass = vec![b'p'; 72];
        let hash = bcrypt::hash(&pass, 4).unwrap();
        let a = Auth::new(BTreeMap::from([("alice".to_string(), hash)]));
        let mut longer = pass.clone();
        longer.extend_from_slice(b"anything");
        assert_eq!(
            a.check(Some(&basic("alice", &longer))).await,
            Verdict::Refused
        );
        assert_eq!(
            a.check(Some(&basic("alice", &pass))).await,
            Verdict::Refused
        );
        let short = bcrypt::hash(b"s3cret", 4).unwrap();
        let a = Auth::new(BTreeMap::from([("alice".to_string(), short)]));
        assert_eq!(
            a.check(Some(&basic("alice", b"s3cret"))).await,
            Verdict::Accepted
        );
        assert_eq!(
            a.check(Some(&basic("alice", b"s3cret!"))).await,
            Verdict::Refused
        );
        assert_eq!(
            a.check(Some(&basic("bob", b"s3cret"))).await,
            Verdict::Refused
        );
        assert_eq!(a.check(None).await, Verdict::Refused);
    }

    #[test]
    fn the_dummy_has_the_highest_cost() {
        let users = BTreeMap::from([
            ("a".to_string(), bcrypt::hash(b"x", 4).unwrap()),
            ("b".to_string(), bcrypt::hash(b"x", 6).unwrap()),
        ]);
        assert_eq!(highest_cost(&users), Some(6));
        let a = Auth::new(users);
        assert_eq!(a.dummy.parse::<bcrypt::HashParts>().unwrap().get_cost(), 6);
    }

    #[tokio::test]
    async fn accepted_credentials_are_remembered_wrong_ones_are_not() {
        let a = Auth::new(BTreeMap::from([(
            "alice".to_string(),
            bcrypt::hash(b"s3cret", 4).unwrap(),
        )]));
        for n in 0..100u32 {
            let wrong = format!("wrong{n}");
            assert_eq!(
                a.check(Some(&basic("alice", wrong.as_bytes()))).await,
                Verdict::Refused
            );
        }
        assert!(a.lock().is_empty());
        assert_eq!(
            a.check(Some(&basic("alice", b"s3cret"))).await,
            Verdict::Accepted
        );
        assert_eq!(a.lock().len(), 1);
    }

    #[tokio::test]
    async fn beyond_the_queue_a_check_is_busy_at_once() {
        let a = std::sync::Arc::new(Auth::new(BTreeMap::from([(
            "alice".to_string(),
            bcrypt::hash(b"s3cret", 6).unwrap(),
        )])));
        let tasks: Vec<_> = (0..2 * (CHECKS + QUEUE))
            .map(|n| {
                let a = std::sync::Arc::clone(&a);
                tokio::spawn(async move {
                    let wrong = format!("wrong{n}");
                    a.check(Some(&basic("alice", wrong.as_bytes()))).await
                })
            })
            .collect();
        let mut verdicts = Vec::new();
        for t in tasks {
            verdicts.push(t.await.unwrap());
        }
        let busy = verdicts.iter().filter(|v| **v == Verdict::Busy).count();
        let refused = verdicts.iter().filter(|v| **v == Verdict::Refused).count();
        assert_eq!(
            (refused, busy),
            (CHECKS + QUEUE, CHECKS + QUEUE),
            "{verdicts:?}"
        );
        // Once the queue drains, checks are taken again.
        assert_eq!(
            a.check(Some(&basic("alice", b"s3cret"))).await,
            Verdict::Accepted
        );
    }
}
