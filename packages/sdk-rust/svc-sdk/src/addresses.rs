//! Engine addresses of a client (sdk.md §2, issue 19 §3), mirroring `addresses.ts` of the client
//! core: one `ws://`/`wss://` URL or several, the engines of one fleet, tried in order and in
//! rotation. As in `async-nats` (`ToServerAddrs`), a `&str` may hold several addresses separated by
//! commas (the form `SVC_URL` takes), and slices, arrays and vectors give one address per entry.
//! No error or log line names an address's credentials: [`display_address`] keeps scheme, host,
//! port and path only.
//!
//! ```
//! use svc_sdk::{display_address, engine_addresses, IntoEngineAddresses};
//!
//! let list = "ws://10.0.0.1:49134, ws://10.0.0.2:49134".into_engine_addresses().unwrap();
//! assert_eq!(engine_addresses(&list, "SVC_URL").unwrap(), ["ws://10.0.0.1:49134", "ws://10.0.0.2:49134"]);
//! assert_eq!(display_address("wss://u:p@svc.example:8443/ws?token=t"), "wss://svc.example:8443/ws");
//! ```

use crate::error::Error;

/// Most addresses one client takes (a fleet is a handful of engines).
pub const MAX_ENGINE_ADDRESSES: usize = 64;

/// What [`crate::register_worker`] takes as its address: one or several engine URLs.
///
/// `None` means "not given": `SVC_URL` (itself a comma-separated list), else
/// [`crate::DEFAULT_ENGINE_URL`]. An empty `&str`/`String` is not given; an empty list is given
/// (and refused).
pub trait IntoEngineAddresses {
    /// The entries, in order, not yet checked; `None` when not given.
    fn into_engine_addresses(self) -> Option<Vec<String>>;
}

/// The entries of a comma-separated list, each trimmed of spaces; empty entries are kept so the
/// check refuses them by position. A comma inside an address is written `%2C`.
pub fn split_address_list(text: &str) -> Vec<String> {
    text.split(',').map(|entry| entry.trim().to_string()).collect()
}

impl IntoEngineAddresses for &str {
    fn into_engine_addresses(self) -> Option<Vec<String>> {
        if self.is_empty() {
            None
        } else {
            Some(split_address_list(self))
        }
    }
}

impl IntoEngineAddresses for &String {
    fn into_engine_addresses(self) -> Option<Vec<String>> {
        self.as_str().into_engine_addresses()
    }
}

impl IntoEngineAddresses for String {
    fn into_engine_addresses(self) -> Option<Vec<String>> {
        self.as_str().into_engine_addresses()
    }
}

impl<S: AsRef<str>> IntoEngineAddresses for &[S] {
    fn into_engine_addresses(self) -> Option<Vec<String>> {
        Some(self.iter().map(|s| s.as_ref().to_string()).collect())
    }
}

impl<S: AsRef<str>> IntoEngineAddresses for Vec<S> {
    fn into_engine_addresses(self) -> Option<Vec<String>> {
        self.as_slice().into_engine_addresses()
    }
}

impl<S: AsRef<str>> IntoEngineAddresses for &Vec<S> {
    fn into_engine_addresses(self) -> Option<Vec<String>> {
        self.as_slice().into_engine_addresses()
    }
}

impl<S: AsRef<str>, const N: usize> IntoEngineAddresses for [S; N] {
    fn into_engine_addresses(self) -> Option<Vec<String>> {
        self.as_slice().into_engine_addresses()
    }
}

impl<S: AsRef<str>, const N: usize> IntoEngineAddresses for &[S; N] {
    fn into_engine_addresses(self) -> Option<Vec<String>> {
        self.as_slice().into_engine_addresses()
    }
}

/// The parts of an absolute URL errors may show: scheme, host (with its port) and path. `None`
/// when `address` is not `scheme://host[:port][/path][?query][#fragment]` with a host of letters,
/// digits, `.`, `-`, `_` or `%` (or an IPv6 literal in brackets) and a numeric port.
fn shown_parts(address: &str) -> Option<(String, &str, &str)> {
    // `host_port` is what follows any `user:password@` in the authority, checked below.
    let (scheme, rest) = address.split_once("://")?;
    if scheme.is_empty() || !scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')) {
        return None;
    }
    let end = rest.find(['/', '?', '#', '\\']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let port = if let Some(v6) = host_port.strip_prefix('[') {
        let (inside, after) = v6.split_once(']')?;
        if inside.is_empty() || !inside.chars().all(|c| c.is_ascii_hexdigit() || matches!(c, ':' | '.')) {
            return None;
        }
        after
    } else {
        let at = host_port.find(':').unwrap_or(host_port.len());
        let host = &host_port[..at];
        if host.is_empty() || !host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '%')) {
            return None;
        }
        &host_port[at..]
    };
    if let Some(digits) = port.strip_prefix(':') {
        if digits.is_empty() || digits.len() > 5 || !digits.chars().all(|c| c.is_ascii_digit()) || digits.parse::<u32>().ok()? > 65535 {
            return None;
        }
    } else if !port.is_empty() {
        return None;
    }
    let after = &rest[end..];
    let path = &after[..after.find(['?', '#']).unwrap_or(after.len())];
    Some((scheme.to_ascii_lowercase(), host_port, path))
}

/// `address` as errors and logs may show it: `scheme://host:port/path`, without user, password,
/// query or fragment (where credentials travel, protocol.md §13.2). `"(not a URL)"` for text that
/// does not parse as one: its parts cannot be told apart, so none of it is shown.
///
/// ```
/// assert_eq!(svc_sdk::display_address("ws://u:pw@127.0.0.1:49134/?token=t"), "ws://127.0.0.1:49134/");
/// assert_eq!(svc_sdk::display_address("token=t"), "(not a URL)");
/// ```
pub fn display_address(address: &str) -> String {
    match shown_parts(address) {
        Some((scheme, host, path)) => format!("{scheme}://{host}{path}"),
        None => "(not a URL)".to_string(),
    }
}

/// Checks a list of engine addresses: non-empty, at most [`MAX_ENGINE_ADDRESSES`], each a `ws://`
/// or `wss://` URL with a host (`wss://` needs the `tls` feature). Returns them as given, in order.
///
/// # Errors
/// [`Error::Runtime`] naming the entry by position (`engine address 2 of 3 is empty`; `source`
/// names the option, e.g. `SVC_URL`) and showing it only through [`display_address`].
pub fn engine_addresses(entries: &[String], source: &str) -> Result<Vec<String>, Error> {
    if entries.is_empty() {
        return Err(Error::Runtime(format!("{source} list is empty: give at least one ws:// or wss:// URL")));
    }
    if entries.len() > MAX_ENGINE_ADDRESSES {
        return Err(Error::Runtime(format!("{source} list has {} entries, at most {MAX_ENGINE_ADDRESSES} are allowed", entries.len())));
    }
    for (i, entry) in entries.iter().enumerate() {
        let name = if entries.len() == 1 { source.to_string() } else { format!("{source} {} of {}", i + 1, entries.len()) };
        if entry.trim().is_empty() {
            return Err(Error::Runtime(format!("{name} is empty: give a ws:// or wss:// URL")));
        }
        let Some((scheme, _, _)) = shown_parts(entry) else {
            return Err(Error::Runtime(format!("{name} is not a URL (expected ws://host:port/ or wss://host/)")));
        };
        if scheme != "ws" && scheme != "wss" {
            return Err(Error::Runtime(format!("{name} must be a ws:// or wss:// URL, got {scheme}: ({})", display_address(entry))));
        }
        if scheme == "wss" && !cfg!(feature = "tls") {
            return Err(Error::Runtime(format!("{name}: wss: addresses need svc-sdk's `tls` feature")));
        }
    }
    Ok(entries.to_vec())
}

/// Where a session connects next: the addresses in order and in rotation, one step on each failed
/// attempt or dropped connection; a full round of steps without an engine taking the worker (its
/// `workerregistered`) ends in a backoff wait. With one address every step is a full round, the
/// single-engine behaviour of sdk.md §8.
#[derive(Debug, Default)]
pub(crate) struct AddressRotation {
    len: usize,
    ended: usize,
}

impl AddressRotation {
    pub(crate) fn new(len: usize) -> Self {
        Self { len, ended: 0 }
    }

    /// The attempt at `index` ended: returns the next index, and whether a round was completed
    /// (a backoff wait is due).
    pub(crate) fn advance(&mut self, index: usize) -> (usize, bool) {
        let next = (index + 1) % self.len;
        self.ended += 1;
        if self.ended < self.len {
            return (next, false);
        }
        self.ended = 0;
        (next, true)
    }

    /// An engine took the worker: the next failure starts a new round.
    pub(crate) fn settle(&mut self) {
        self.ended = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_str_is_a_comma_separated_list_and_a_slice_one_address_per_entry() {
        assert_eq!("".into_engine_addresses(), None);
        assert_eq!(" ws://a:1 , ws://b:2/ ".into_engine_addresses(), Some(strings(&["ws://a:1", "ws://b:2/"])));
        assert_eq!(["ws://a:1/?t=x,y"].into_engine_addresses(), Some(strings(&["ws://a:1/?t=x,y"])));
        assert_eq!(Vec::<String>::new().into_engine_addresses(), Some(vec![]));
        assert_eq!(vec!["ws://a:1".to_string()].into_engine_addresses(), Some(strings(&["ws://a:1"])));
    }

    #[test]
    fn refuses_bad_lists_naming_the_entry_by_position() {
        let err = |v: &[&str]| match engine_addresses(&strings(v), "engine address") {
            Err(Error::Runtime(m)) => m,
            other => panic!("expected a refusal, got {other:?}"),
        };
        assert!(err(&[]).contains("engine address list is empty"));
        assert!(err(&["ws://a:1", ""]).contains("engine address 2 of 2 is empty"));
        assert!(err(&["ws://a:1", "ws://b:1", "nope"]).contains("engine address 3 of 3 is not a URL"));
        assert!(err(&["http://a:1/"]).contains("engine address must be a ws:// or wss:// URL, got http"));
        assert!(err(&["ws://"]).contains("is not a URL"));
        assert!(err(&["ws://h:99999/"]).contains("is not a URL"));
        let leaky = err(&["ws://a:1", "https://user:hunter2@svc.example/p?token=s3cret#frag"]);
        assert!(leaky.contains("https://svc.example/p") && !leaky.contains("hunter2") && !leaky.contains("s3cret") && !leaky.contains("frag"), "{leaky}");
        let stray = err(&["http://u:s3cret?x@h/"]);
        assert!(!stray.contains("s3cret"), "{stray}");
        assert_eq!(display_address("ws://[::1]:2/x?t=1"), "ws://[::1]:2/x");
    }

    #[test]
    fn rotation_moves_on_at_once_and_waits_only_after_a_full_round() {
        let mut r = AddressRotation::new(3);
        let mut at = 0;
        let mut steps = vec![];
        for _ in 0..6 {
            let (next, round) = r.advance(at);
            at = next;
            steps.push((round, at));
        }
        assert_eq!(steps, [(false, 1), (false, 2), (true, 0), (false, 1), (false, 2), (true, 0)]);
        r.advance(0);
        r.settle();
        assert_eq!([r.advance(1).1, r.advance(2).1, r.advance(0).1], [false, false, true]);
        let mut one = AddressRotation::new(1);
        assert_eq!([one.advance(0), one.advance(0)], [(0, true), (0, true)]);
    }

    fn entry() -> impl Strategy<Value = String> {
        let secret = "[A-Za-z0-9]{1,8}".prop_map(|s| format!("SECRET{s}X"));
        prop_oneof![
            4 => (
                prop::sample::select(vec!["ws", "wss", "http", "https", "file", "javascript", "WS"]),
                prop::sample::select(vec!["a:1", "[::1]:2", "h.example", "127.0.0.1:49134"]),
                prop::option::of(secret.clone()),
                prop::option::of(secret.clone()),
                prop::option::of(secret.clone()),
            )
                .prop_map(|(scheme, host, user, token, frag)| {
                    let user = user.map(|u| format!("u:{u}@")).unwrap_or_default();
                    let token = token.map(|t| format!("?token={t}")).unwrap_or_default();
                    let frag = frag.map(|f| format!("#{f}")).unwrap_or_default();
                    format!("{scheme}://{user}{host}/{token}{frag}")
                }),
            1 => prop::sample::select(vec!["", " ", "ws://", "ws:", "//h", "not a url", "ws://[::1", "ws://h/?a=%2C", "ws://h:99999/"]).prop_map(String::from),
            1 => (prop::sample::select(vec!["ws", "http", "wss"]), prop::sample::select(vec!["?", "#", "/", "\\", "%", "[", " ", "@"]))
                .prop_map(|(scheme, c)| format!("{scheme}://u:SECRET{c}x@h/")),
        ]
    }

    proptest! {
        #[test]
        fn any_svc_url_is_read_as_its_entries_or_refused_without_credentials(
            parts in prop::collection::vec((prop::sample::select(vec!["", " ", "\t"]), entry(), prop::sample::select(vec!["", " "])), 1..6)
        ) {
            let value = parts.iter().map(|(l, e, r)| format!("{l}{e}{r}")).collect::<Vec<_>>().join(",");
            let Some(entries) = value.as_str().into_engine_addresses() else { return Ok(()) };
            match engine_addresses(&entries, "SVC_URL") {
                Err(Error::Runtime(message)) => prop_assert!(!message.contains("SECRET"), "{}", message),
                Err(other) => prop_assert!(false, "unexpected {:?}", other),
                Ok(list) => {
                    prop_assert_eq!(list, parts.iter().map(|(_, e, _)| e.trim().to_string()).collect::<Vec<_>>());
                    for address in &entries {
                        prop_assert!(!display_address(address).contains("SECRET"));
                    }
                }
            }
        }
    }
}
