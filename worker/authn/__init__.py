"""Caller authentication: a host proves it speaks for a caller session.

A request carries a JWT signed by its host with Ed25519 (``EdDSA``); the worker checks it
against a keyring of host public keys before anything is read. Authorization of what
the caller may see stays in ``worker.tools.access``.
"""
