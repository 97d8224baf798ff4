//! Who is on the other end of the socket: the kernel's word (SO_PEERCRED),
//! turned into a user name through the system's user database.

use std::ffi::CStr;

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

/// The name of `uid` in the user database (getpwuid_r, so NSS sources
/// such as LDAP count too).
pub fn user_name(uid: u32) -> Option<String> {
    let mut buf = vec![0u8; 4096];
    loop {
        // SAFETY: `pwd` and `buf` outlive the call; getpwuid_r writes only
        // into them and sets `result` to null or to `&pwd`.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        let rc = unsafe {
            libc::getpwuid_r(
                uid,
                &mut pwd,
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut result,
            )
        };
        if rc == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 2, 0);
            continue;
        }
        if rc != 0 || result.is_null() || pwd.pw_name.is_null() {
            return None;
        }
        // SAFETY: pw_name points into `buf`, NUL-terminated by getpwuid_r.
        let name = unsafe { CStr::from_ptr(pwd.pw_name) };
        return name.to_str().ok().map(str::to_string);
    }
}

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
