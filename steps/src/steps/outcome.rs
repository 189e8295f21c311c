//! What a step returns. cucumber prints a failed step's error with `{}`, which for an
//! [`anyhow::Error`] is only its outermost context ("creating AppWrapper"): a [`Failure`]
//! prints the whole chain, so the report says why the request failed.

use std::fmt;

/// A step's result.
pub type Outcome = Result<(), Failure>;

/// A step's error, printed with its causes.
pub struct Failure(pub anyhow::Error);

impl<E: Into<anyhow::Error>> From<E> for Failure {
    fn from(error: E) -> Self {
        Failure(error.into())
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#}", self.0)
    }
}

impl fmt::Debug for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

/// `anyhow::bail!` for a step or a helper: returns the error as whatever error type the
/// function returns.
#[macro_export]
macro_rules! fail {
    ($($message:tt)+) => {
        return ::core::result::Result::Err(::anyhow::anyhow!($($message)+).into())
    };
}

/// `anyhow::ensure!` for a step or a helper.
#[macro_export]
macro_rules! require {
    ($condition:expr, $($message:tt)+) => {
        if !$condition {
            $crate::fail!($($message)+);
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context as _;

    fn create() -> anyhow::Result<()> {
        Err(anyhow::anyhow!("the webhook timed out")).context("creating AppWrapper")
    }

    fn step() -> Outcome {
        create()?;
        Ok(())
    }

    fn refuse(n: u32) -> Outcome {
        crate::require!(n > 1, "{n} is too few");
        crate::fail!("{n} is too many")
    }

    #[test]
    fn a_failed_step_says_why() {
        let failure = step().unwrap_err();
        assert_eq!(
            format!("{failure}"),
            "creating AppWrapper: the webhook timed out"
        );
    }

    #[test]
    fn fail_and_require_return_the_step_error() {
        assert_eq!(refuse(1).unwrap_err().to_string(), "1 is too few");
        assert_eq!(refuse(2).unwrap_err().to_string(), "2 is too many");
    }
}
