//! The id check the engine's codec makes (protocol.md §3.5, `idProblem` in
//! `packages/protocol/src/ids.ts`): the client refuses, before sending, an id or a namespace the
//! engine would refuse.

/// Longest id or namespace accepted, in UTF-16 code units.
pub const MAX_ID_LENGTH: usize = 1024;

/// Why `id` cannot name a function, trigger type, trigger or namespace, or `None` when it can:
/// at most 1024 UTF-16 code units, no control characters (U+0000–U+001F, U+007F). (A Rust `str`
/// cannot hold a lone surrogate, the third rule of the engine's check.)
pub fn id_problem(id: &str) -> Option<String> {
    let units: usize = id.chars().map(char::len_utf16).sum();
    if units > MAX_ID_LENGTH {
        return Some(format!("is longer than {MAX_ID_LENGTH} characters ({units})"));
    }
    let mut index = 0;
    for c in id.chars() {
        if (c as u32) < 0x20 || c as u32 == 0x7f {
            return Some(format!("contains a control character (U+{:04X}) at index {index}", c as u32));
        }
        index += c.len_utf16();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_engine_check() {
        assert_eq!(id_problem("orders::validate"), None);
        assert_eq!(id_problem("a\u{1}b").as_deref(), Some("contains a control character (U+0001) at index 1"));
        assert_eq!(id_problem("😀\u{7f}").as_deref(), Some("contains a control character (U+007F) at index 2"));
        assert!(id_problem(&"x".repeat(1025)).unwrap().starts_with("is longer than 1024"));
    }
}
