//! End-to-end tests of the `hooks-app` binary, as a user runs it: real processes, real
//! files in a scratch home, the real `claude` CLI against a loopback mock API, and a fake
//! `claude` script where the real one is not needed.

mod attacks;
mod bad_input;
mod browser;
mod chaos;
mod codex;
mod cost;
mod flow;
mod http;
mod install;
mod interactive;
mod limits;
mod ondemand;
mod plugin;
mod postgres;
mod reliability;
mod schedule;
mod security;
mod support;
mod tour;
mod webhook;
