//! Saturating sum of a slice: never overflows.

pub fn sum(values: &[u32]) -> u32 {
    values.iter().fold(0u32, |acc, v| acc.saturating_add(*v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_values() {
        assert_eq!(sum(&[1, 2, 3]), 6);
    }

    #[test]
    fn saturates_instead_of_overflowing() {
        assert_eq!(sum(&[u32::MAX, 1]), u32::MAX);
    }
}
