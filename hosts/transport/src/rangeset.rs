//! A set of disjoint half-open byte ranges.

use std::collections::BTreeMap;

#[derive(Debug, Default, Clone)]
pub struct RangeSet {
    /// start -> end, disjoint and non-adjacent.
    map: BTreeMap<u64, u64>,
}

impl RangeSet {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn len(&self) -> usize {
        self.map.len()
    }
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    /// Inserts [s, e); returns the number of bytes not already covered.
    pub fn insert(&mut self, s: u64, e: u64) -> u64 {
        if e <= s {
            return 0;
        }
        let mut ns = s;
        let mut ne = e;
        let mut covered = 0;
        // ranges that overlap or touch [s, e)
        let touching: Vec<(u64, u64)> = self
            .map
            .range(..=e)
            .rev()
            .take_while(|(_, &end)| end >= s)
            .map(|(&a, &b)| (a, b))
            .collect();
        for (a, b) in touching {
            let lo = a.max(s);
            let hi = b.min(e);
            if hi > lo {
                covered += hi - lo;
            }
            ns = ns.min(a);
            ne = ne.max(b);
            self.map.remove(&a);
        }
        self.map.insert(ns, ne);
        (e - s) - covered
    }
    /// Removes and returns the first range if it starts at or below `x`.
    pub fn pop_first_if_starts_by(&mut self, x: u64) -> Option<(u64, u64)> {
        let (&a, &b) = self.map.iter().next()?;
        if a <= x {
            self.map.remove(&a);
            Some((a, b))
        } else {
            None
        }
    }
    pub fn containing(&self, x: u64) -> Option<(u64, u64)> {
        let (&a, &b) = self.map.range(..=x).next_back()?;
        if x < b {
            Some((a, b))
        } else {
            None
        }
    }
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.map.iter().map(|(&a, &b)| (a, b))
    }
    pub fn total(&self) -> u64 {
        self.map.iter().map(|(a, b)| b - a).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn merges() {
        let mut r = RangeSet::new();
        assert_eq!(r.insert(10, 20), 10);
        assert_eq!(r.insert(30, 40), 10);
        assert_eq!(r.insert(15, 35), 10);
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![(10, 40)]);
        assert_eq!(r.insert(40, 50), 10);
        assert_eq!(r.insert(0, 10), 10);
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![(0, 50)]);
        assert_eq!(r.insert(5, 45), 0);
        assert_eq!(r.insert(60, 70), 10);
        assert_eq!(r.containing(65), Some((60, 70)));
        assert_eq!(r.containing(55), None);
        assert_eq!(r.total(), 60);
        assert_eq!(r.pop_first_if_starts_by(0), Some((0, 50)));
        assert_eq!(r.pop_first_if_starts_by(50), None);
    }
}
