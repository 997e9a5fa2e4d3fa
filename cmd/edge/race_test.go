//go:build race

package main

// raceEnabled: under the race detector this test process (the simulators,
// the raw PMS, the load) runs several times slower and the suite takes
// longest; a scenario whose claim is what the edge answers, not how fast,
// widens the edge's deadlines under it (the edge binary itself is built
// without -race).
const raceEnabled = true
