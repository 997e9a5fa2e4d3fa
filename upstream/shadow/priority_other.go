//go:build !linux

package shadow

// lowerPriority is a no-op where a thread's priority cannot be set alone:
// the pacing (Config.ReadBytesPerSecond) still bounds the walk's CPU.
func lowerPriority() error { return nil }
