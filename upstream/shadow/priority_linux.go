package shadow

import "syscall"

// lowerPriority gives the calling thread the lowest scheduling priority
// (nice 19): the kernel then runs partner work first whenever both want a
// core. The caller has locked its goroutine to the thread.
func lowerPriority() error {
	return syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), 19)
}
