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
//!   answered busy at once instead of waiting behind a flood. A source
//!   (an address, an IPv6 /64) holds at most [`PER_SOURCE`] places of the
//!   queue, so that sources flooding wrong credentials leave a scraper's
//!   first check (after a restart, before its credential is remembered)
//!   its way through. Known and unknown users share the queue alike: a
//!   lane of their own would tell which users exist.
//! - The password a client sent is a [`Secret`]: wiped, never printed.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use hyper::header::HeaderValue;
use sha2::Digest;
use tokio::sync::Semaphore;

use crate::edge::Secret;
use crate::edge::head::basic_credentials;
use crate::edge::net::source_of;

/// bcrypt checks at once.
const CHECKS: usize = 2;
/// Requests waiting for a bcrypt check, at most (beyond: busy).
pub const QUEUE: usize = 8;
/// Accepted credentials remembered.
pub const REMEMBERED: usize = 64;
/// Checks of one source checking or waiting, at most (beyond: busy).
pub const PER_SOURCE: usize = 2;

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
    /// Of them, by source (at most `CHECKS + QUEUE` entries).
    by_source: Mutex<HashMap<IpAddr, usize>>,
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
            by_source: Mutex::new(HashMap::new()),
            remembered: Mutex::new(Lru::new(REMEMBERED)),
        }
    }

    /// Whether authentication is off (no users).
    pub fn is_off(&self) -> bool {
        self.users.is_empty()
    }

    /// The verdict on an Authorization header from `ip`.
    pub async fn check(&self, h: Option<&HeaderValue>, ip: IpAddr) -> Verdict {
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
        let source = source_of(ip);
        {
            let mut by = self.by_source.lock().unwrap_or_else(|e| e.into_inner());
            let mine = by.get(&source).copied().unwrap_or(0);
            if mine >= PER_SOURCE {
                return Verdict::Busy;
            }
            if self.waiting.fetch_add(1, Ordering::AcqRel) >= CHECKS + QUEUE {
                self.waiting.fetch_sub(1, Ordering::AcqRel);
                return Verdict::Busy;
            }
            by.insert(source, mine + 1);
        }
        // Its place is given back however the check ends (also when the
        // request is dropped while it waits).
        let _place = QueuePlace(self, source);
        let ok = self.verify(pass, hash).await && known.is_some();
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

/// A source's place in the bcrypt queue, given back when dropped.
struct QueuePlace<'a>(&'a Auth, IpAddr);

impl Drop for QueuePlace<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::AcqRel);
        let mut by = self.0.by_source.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = by.get_mut(&self.1) {
            *n -= 1;
            if *n == 0 {
                by.remove(&self.1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    fn ip(n: u32) -> IpAddr {
        IpAddr::from((0x0a00_0000 + n).to_be_bytes())
    }

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
            a.check(Some(&basic("alice", &longer)), ip(1)).await,
            Verdict::Refused
        );
        assert_eq!(
            a.check(Some(&basic("alice", &pass)), ip(1)).await,
            Verdict::Refused
        );
        let short = bcrypt::hash(b"s3cret", 4).unwrap();
        let a = Auth::new(BTreeMap::from([("alice".to_string(), short)]));
        assert_eq!(
            a.check(Some(&basic("alice", b"s3cret")), ip(1)).await,
            Verdict::Accepted
        );
        assert_eq!(
            a.check(Some(&basic("alice", b"s3cret!")), ip(1)).await,
            Verdict::Refused
        );
        assert_eq!(
            a.check(Some(&basic("bob", b"s3cret")), ip(1)).await,
            Verdict::Refused
        );
        assert_eq!(a.check(None, ip(1)).await, Verdict::Refused);
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
                a.check(Some(&basic("alice", wrong.as_bytes())), ip(1))
                    .await,
                Verdict::Refused
            );
        }
        assert!(a.lock().is_empty());
        assert_eq!(
            a.check(Some(&basic("alice", b"s3cret")), ip(1)).await,
            Verdict::Accepted
        );
        assert_eq!(a.lock().len(), 1);
    }

    /// alice with password s3cret, at bcrypt cost 6 (a check takes long
    /// enough for a flood to queue behind it).
    fn alice() -> std::sync::Arc<Auth> {
        std::sync::Arc::new(Auth::new(BTreeMap::from([(
            "alice".to_string(),
            bcrypt::hash(b"s3cret", 6).unwrap(),
        )])))
    }

    /// `2 * (CHECKS + QUEUE)` wrong checks at once, the nth from `from(n)`.
    fn flood(
        a: &std::sync::Arc<Auth>,
        from: fn(u32) -> IpAddr,
    ) -> Vec<tokio::task::JoinHandle<Verdict>> {
        (0..2 * (CHECKS + QUEUE) as u32)
            .map(|n| {
                let a = std::sync::Arc::clone(a);
                tokio::spawn(async move {
                    let wrong = format!("wrong{n}");
                    a.check(Some(&basic("alice", wrong.as_bytes())), from(n))
                        .await
                })
            })
            .collect()
    }

    #[tokio::test]
    async fn beyond_the_queue_a_check_is_busy_at_once() {
        let a = alice();
        let tasks = flood(&a, ip);
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
            a.check(Some(&basic("alice", b"s3cret")), ip(1)).await,
            Verdict::Accepted
        );
    }

    /// Sources flooding wrong credentials hold at most their share of the
    /// queue: a scraper's first check, its credential not remembered yet,
    /// gets through.
    #[tokio::test]
    async fn a_flooding_source_holds_its_share_of_the_queue() {
        let a = alice();
        // Two flooding sources, each with more checks at once than the
        // queue holds.
        let tasks = flood(&a, |n| ip(100 + n % 2));
        // Until the flood holds its places.
        while a.waiting.load(Ordering::Acquire) < 2 * PER_SOURCE {
            tokio::task::yield_now().await;
        }
        assert_eq!(
            a.check(Some(&basic("alice", b"s3cret")), ip(1)).await,
            Verdict::Accepted,
            "the scraper's first check"
        );
        let mut busy = 0;
        for t in tasks {
            busy += usize::from(t.await.unwrap() == Verdict::Busy);
        }
        assert_eq!(busy, 2 * (CHECKS + QUEUE) - 2 * PER_SOURCE);
    }
}
