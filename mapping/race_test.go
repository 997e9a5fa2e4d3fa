//go:build race

package mapping

// raceDetector: built with -race, which drops sync.Pool items at random
// (to find code that relies on them), so allocation counts are not the
// program's.
const raceDetector = true
