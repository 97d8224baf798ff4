//! Who is on the other end of the socket: the kernel's word (SO_PEERCRED),
//! turned into a user name through the system's user database.

/// The peer of one connection: its uid, when the kernel could say.
#[derive(Clone, Copy, Debug)]
pub struct Peer {
    pub uid: Option<u32>,
}

impl Peer {
    /// The peer's user name, or why there is none.
    pub fn user(&self) -> Result<String, String> {
        let uid = self.uid.ok_or_else(|| {
            "the kernel did not say who is connecting (no SO_PEERCRED)".to_string()
        })?;
        user_name(uid).ok_or_else(|| format!("uid {uid} has no user name on this machine"))
    }
}

/// The name of `uid` in the user database (one implementation, the
/// wire protocol's FS authentication uses it too).
pub use cedar::auth::user_name;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_uid_0_and_the_caller_has_a_name() {
        assert_eq!(user_name(0).as_deref(), Some("root"));
        // SAFETY: getuid cannot fail.
        let me = unsafe { libc::getuid() };
        assert!(user_name(me).is_some());
        assert!(Peer { uid: None }
            .user()
            .unwrap_err()
            .contains("SO_PEERCRED"));
    }
}
