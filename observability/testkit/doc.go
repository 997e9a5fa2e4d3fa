// Package testkit holds the test helpers every package of the module
// shares: a settable clock (Clock), a log sink safe for concurrent writers
// (LogBuffer), a poll for events outside the test's control
// (Eventually), a writer of self-signed certificates replaced by rename
// (WriteCertPair), and a reader of /metrics (Scrape, Series). It is for _test.go files only; no program imports it.
//
// Why here: the helpers must be importable from the tests of upstream,
// observability, edge and cmd alike. Go's internal rule lets a package
// under a/internal be imported only from a's tree, so a module-wide
// internal package would need a new top-level directory, which the
// layout does not allow. observability is the one package every layer
// may import and that imports nothing of the project, so a sub-package of
// it adds no import the architecture does not already allow, and
// observability's own tests can use it without a cycle: testkit imports
// nothing of the project either.
//
// Time in tests: logic that depends on time takes an injected clock
// (Clock.Now) or runs under testing/synctest, never a wall-clock wait for
// a timer of the code under test. Eventually is for outside events only: a
// process starting, a file watcher's notification, a span ending just
// after its answer was written.
package testkit
