//! GitHub: a client trait, the REST implementation, and the pure verdict logic of `verify`.
