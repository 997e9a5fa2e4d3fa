//go:build !race

package mapping

// raceDetector: see race_test.go.
const raceDetector = false
