// Package testkit holds the test helpers every package of the module
// shares: a settable clock (Clock) and one that starts on a fixed day and
// then moves (From), a log sink safe for concurrent writers
// (LogBuffer), a poll for events outside the test's control
// (Eventually), a writer of self-signed certificates replaced by rename
// (WriteCertPair), a reader of /metrics (Scrape, Series), an OTLP/HTTP
// collector that keeps what it receives (OTLPReceiver), a loopback
// address that refuses connections for the whole test (RefusingAddr), and
// the real OpenTelemetry SDK reading back what the code under test records
// (Telemetry). It is for _test.go files only; no program imports it.
//
// Why here: the tests of upstream, observability, edge and cmd alike import
// it, and a module-wide internal package would need a new top-level
// directory. observability is the one package every layer may import and
// that imports nothing of the project: a sub-package of it adds no import
// the architecture does not already allow, and testkit imports nothing of
// the project either (no cycle with observability's own tests).
//
// Time in tests: logic that depends on time takes an injected clock
// (Clock.Now) or runs under testing/synctest, never a wall-clock wait for
// a timer of the code under test. Eventually is for outside events only: a
// process starting, a file watcher's notification, a span ending just
// after its answer was written.
package testkit
