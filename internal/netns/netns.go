// Package netns manages named network namespaces, the ones `ip netns`
// keeps as bind mounts under /run/netns, and runs code inside them, or
// inside the namespace of a veth's peer, named or not (DoByID).
//
// Namespaces are per thread in Linux, and Go moves goroutines between
// threads, so anything that enters a namespace does it on a goroutine of its
// own that is locked to its thread for the whole time (see Do).
package netns

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// runDir is where iproute2 keeps named namespaces; using the same place
// makes ours visible to `ip netns` and theirs to us.
const runDir = "/run/netns"

// notExistError reports a missing namespace in words and still matches
// errors.Is(err, fs.ErrNotExist), so that callers can treat "already gone"
// as success.
type notExistError struct{ name string }

func (e notExistError) Error() string {
	return fmt.Sprintf("network namespace %q does not exist", e.name)
}

func (e notExistError) Is(target error) bool { return target == fs.ErrNotExist }

func path(name string) string { return filepath.Join(runDir, name) }

// validateName rejects names that would escape runDir or that iproute2
// refuses, so the same names work with `ip netns exec`.
func validateName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("invalid network namespace name %q", name)
	}
	return nil
}

// Exists reports whether the named network namespace exists: a namespace,
// not merely a leftover file, is mounted at /run/netns/NAME.
func Exists(name string) bool {
	if validateName(name) != nil {
		return false
	}
	var st unix.Statfs_t
	if err := unix.Statfs(path(name), &st); err != nil {
		return false
	}
	return st.Type == unix.NSFS_MAGIC
}

// Create makes a named network namespace, as `ip netns add` does, and brings
// its loopback up. It fails if the name is taken.
func Create(name string) error {
	if err := validateName(name); err != nil {
		return err
	}
	if err := prepareRunDir(); err != nil {
		return err
	}
	p := path(name)
	f, err := os.OpenFile(p, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("network namespace %q already exists", name)
	}
	if err != nil {
		return fmt.Errorf("create network namespace %q: %w", name, err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(p)
		return fmt.Errorf("create network namespace %q: %w", name, err)
	}
	if err := onLockedThread(func() error { return unshareAndMount(p) }); err != nil {
		_ = os.Remove(p)
		return fmt.Errorf("create network namespace %q: %w", name, err)
	}
	if err := loopbackUp(p); err != nil {
		_ = unmountAndRemove(p)
		return fmt.Errorf("create network namespace %q: %w", name, err)
	}
	return nil
}

// prepareRunDir makes runDir a shared mount point, as iproute2 does, so that
// namespaces mounted later propagate into mount namespaces created before
// (such as the one `ip netns exec` runs in).
func prepareRunDir() error {
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", runDir, err)
	}
	err := unix.Mount("", runDir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if errors.Is(err, unix.EINVAL) {
		// Not a mount point yet: make it one, then share it.
		if err := unix.Mount(runDir, runDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind-mount %s: %w", runDir, err)
		}
		err = unix.Mount("", runDir, "none", unix.MS_SHARED|unix.MS_REC, "")
	}
	if err != nil {
		return fmt.Errorf("make %s a shared mount: %w", runDir, err)
	}
	return nil
}

// unshareAndMount moves the calling (locked) thread into a new network
// namespace and pins that namespace at p. The caller restores the thread.
func unshareAndMount(p string) error {
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("unshare: %w", err)
	}
	self := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
	if err := unix.Mount(self, p, "none", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind-mount %s: %w", p, err)
	}
	return nil
}

func loopbackUp(p string) error {
	ns, err := vnetns.GetFromPath(p)
	if err != nil {
		return err
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return err
	}
	if err := h.LinkSetUp(lo); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	return nil
}

// Delete removes a named network namespace, as `ip netns del` does. The
// namespace itself lives on while processes or sockets still use it. If it
// does not exist, the error matches errors.Is(err, fs.ErrNotExist).
func Delete(name string) error {
	if err := validateName(name); err != nil {
		return err
	}
	if err := unmountAndRemove(path(name)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return notExistError{name}
		}
		return fmt.Errorf("delete network namespace %q: %w", name, err)
	}
	return nil
}

func unmountAndRemove(p string) error {
	err := unix.Unmount(p, unix.MNT_DETACH)
	// EINVAL: a file left without its mount (a crash mid-Create); remove it.
	if err != nil && !errors.Is(err, unix.EINVAL) {
		return err
	}
	return os.Remove(p)
}

// Do runs fn on a goroutine locked to a thread that has entered the named
// namespace, and returns fn's error. Sockets fn creates belong to that
// namespace for their whole life, so this is how a caller listens or
// pings "inside" a namespace. A panic in fn is not recovered.
func Do(name string, fn func() error) error {
	if err := validateName(name); err != nil {
		return err
	}
	target, err := vnetns.GetFromName(name)
	if errors.Is(err, fs.ErrNotExist) {
		return notExistError{name}
	}
	if err != nil {
		return fmt.Errorf("open network namespace %q: %w", name, err)
	}
	defer target.Close()
	return doIn(target, name, fn)
}

// DoByID runs fn as Do does, in the network namespace that the caller's
// knows by the id nsid (as a veth's link-netnsid names its peer's): a named
// one, or else one that a process is in, as a container runtime's are. It
// returns where that namespace was found, for messages: its name, or
// "pid N".
func DoByID(nsid int, fn func() error) (where string, err error) {
	target, path, err := openByID(nsid)
	if err != nil {
		return "", err
	}
	defer target.Close()
	where = strings.TrimPrefix(path, runDir+"/")
	if pid, ok := strings.CutPrefix(path, "/proc/"); ok {
		where = "pid " + strings.TrimSuffix(pid, "/ns/net")
	}
	return where, doIn(target, where, fn)
}

// doIn runs fn on a goroutine locked to a thread in namespace target,
// called where in errors.
func doIn(target vnetns.NsHandle, where string, fn func() error) error {
	return onLockedThread(func() error {
		if err := vnetns.Set(target); err != nil {
			return fmt.Errorf("enter network namespace %q: %w", where, err)
		}
		return fn()
	})
}

// byID remembers where each namespace id was last found, so that finding
// it again costs one open, not a look through every process. A namespace
// is known only by path, never kept open: an open one would outlive its
// processes, and with it its interfaces.
var byID struct {
	sync.Mutex
	paths map[int]string
}

// openByID opens the namespace that the caller's knows as nsid, and
// returns the path it opened.
func openByID(nsid int) (vnetns.NsHandle, string, error) {
	byID.Lock()
	defer byID.Unlock()
	if path, ok := byID.paths[nsid]; ok {
		if ns, err := openIfID(path, nsid); err == nil {
			return ns, path, nil
		}
	}
	var paths []string
	if named, err := os.ReadDir(runDir); err == nil {
		for _, e := range named {
			paths = append(paths, path(e.Name()))
		}
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return -1, "", fmt.Errorf("finding the network namespace with id %d: %w", nsid, err)
	}
	for _, e := range procs {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			paths = append(paths, filepath.Join("/proc", e.Name(), "ns/net"))
		}
	}
	seen := map[uint64]bool{} // by inode: a namespace once, however many processes share it
	for _, p := range paths {
		var st unix.Stat_t
		if unix.Stat(p, &st) != nil || seen[st.Ino] {
			continue
		}
		seen[st.Ino] = true
		if ns, err := openIfID(p, nsid); err == nil {
			if byID.paths == nil {
				byID.paths = map[int]string{}
			}
			byID.paths[nsid] = p
			return ns, p, nil
		}
	}
	return -1, "", fmt.Errorf("the network namespace with id %d has no name in %s and no process in it", nsid, runDir)
}

// openIfID opens the namespace at path if it is the one the caller's
// knows as nsid.
func openIfID(path string, nsid int) (vnetns.NsHandle, error) {
	ns, err := vnetns.GetFromPath(path)
	if err != nil {
		return -1, err
	}
	if id, err := netlink.GetNetNsIdByFd(int(ns)); err != nil || id != nsid {
		ns.Close()
		return -1, fmt.Errorf("%s is not the network namespace with id %d", path, nsid)
	}
	return ns, nil
}

// onLockedThread runs fn on a fresh goroutine locked to its thread and then
// puts the thread back into the namespace it started in. fn may leave the
// thread in any network namespace. If the thread cannot be put back, it
// stays locked, so the runtime destroys it with the goroutine instead of
// handing a thread in the wrong namespace to other goroutines.
func onLockedThread(fn func() error) error {
	result := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		origin, err := vnetns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			result <- fmt.Errorf("open current network namespace: %w", err)
			return
		}
		defer origin.Close()
		fnErr := fn()
		if err := vnetns.Set(origin); err != nil {
			result <- errors.Join(fnErr, fmt.Errorf("return to original network namespace: %w", err))
			return
		}
		runtime.UnlockOSThread()
		result <- fnErr
	}()
	return <-result
}
