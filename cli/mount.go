package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/fusefs"
)

// readyFDEnv names the descriptor on which a background server reports to the command that
// started it: "ready" once mounted, or the error that stopped it.
const readyFDEnv = "TIERFS_MOUNT_READY_FD"

func mountCmd(fs *pflag.FlagSet) runFunc {
	opt := storeFlags(fs)
	foreground := fs.Bool("foreground", false, "serve in this process until unmounted or interrupted, instead of in the background")
	usePlacement := fs.Bool("placement", false, "fill the host tier from the placement `tierfs place` saved in the dataset (fresh for --host-cache)")
	return func(pos []string) error {
		datasetDir, mountpoint := pos[0], pos[1]
		if _, err := fusefs.CheckMountpoint(mountpoint); err != nil {
			return err // before the server starts, which would make "" the working directory
		}
		if !*foreground {
			// The server gets the same flags (every store option and --placement).
			var flags []string
			fs.Visit(func(f *pflag.Flag) {
				if f.Name != "foreground" {
					flags = append(flags, "--"+f.Name+"="+f.Value.String())
				}
			})
			return mountInBackground(datasetDir, mountpoint, flags)
		}
		var ready *os.File
		if fd := os.Getenv(readyFDEnv); fd != "" {
			os.Unsetenv(readyFDEnv)
			n, err := strconv.Atoi(fd)
			if err != nil {
				return fmt.Errorf("%s=%q is not a file descriptor", readyFDEnv, fd)
			}
			ready = os.NewFile(uintptr(n), "mount-ready")
		}
		err := serveMount(datasetDir, mountpoint, *opt, *usePlacement, ready)
		if err != nil && ready != nil {
			// Started by mountInBackground: it prints the error.
			if _, werr := fmt.Fprintln(ready, err); werr == nil {
				os.Exit(1)
			}
		}
		return err
	}
}

// mountInBackground runs this command again with --foreground in a new session, waits until it
// has mounted (or failed to), and returns; the server runs on until unmounted. Until it is ready
// the server writes to our stderr (fusermount's complaints reach the user), then to /dev/null.
func mountInBackground(datasetDir, mountpoint string, flags []string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	// The server runs in / so it keeps no directory busy: hand it absolute paths.
	if datasetDir, err = filepath.Abs(datasetDir); err != nil {
		return err
	}
	if mountpoint, err = filepath.Abs(mountpoint); err != nil {
		return err
	}
	devNull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer devNull.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer readyR.Close()
	args := append(append([]string{"mount", "--foreground"}, flags...), datasetDir, mountpoint)
	cmd := exec.Command(exe, args...)
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), readyFDEnv+"=3")
	cmd.ExtraFiles = []*os.File{readyW}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devNull, devNull, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	readyW.Close()
	if err != nil {
		return fmt.Errorf("start the server: %w", err)
	}
	report, _ := io.ReadAll(readyR) // until the server reports, or exits
	msg := strings.TrimSpace(string(report))
	if msg == "ready" {
		fmt.Printf("mounted %s at %s (server pid %d; stop it with: tierfs umount %s)\n", datasetDir, mountpoint, cmd.Process.Pid, mountpoint)
		return cmd.Process.Release()
	}
	waitErr := cmd.Wait()
	if msg != "" {
		return errors.New(msg)
	}
	return fmt.Errorf("the server exited before the mount was ready: %v", waitErr)
}

// serveMount opens the dataset, mounts it, reports readiness to ready (when not nil), and serves
// until SIGINT, SIGTERM, SIGHUP, or an unmount from outside.
func serveMount(datasetDir, mountpoint string, opt featurestore.Options, usePlacement bool, ready *os.File) error {
	if err := withPlacement(datasetDir, &opt, usePlacement); err != nil {
		return err
	}
	store, err := openStore(datasetDir, opt)
	if err != nil {
		return err
	}
	defer store.Close()
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(signals)
	view, err := fusefs.Mount(store, mountpoint, fusefs.Options{Placement: fusefs.PlacementOf(store, opt)})
	if err != nil {
		return err
	}
	if ready != nil {
		// Let go of the terminal (or pipe) of the command that started us before it returns.
		if devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0); err == nil {
			unix.Dup2(int(devNull.Fd()), int(os.Stderr.Fd()))
			devNull.Close()
		}
		_, err := ready.WriteString("ready\n")
		ready.Close()
		if err != nil { // the command waiting for us is gone: nobody knows this mount exists
			view.Unmount()
			return fmt.Errorf("report readiness: %w", err)
		}
	} else {
		fmt.Fprintf(os.Stderr, "serving %s at %s; stop with Ctrl-C or: tierfs umount %s\n", datasetDir, view.Dir(), view.Dir())
	}
	stopped := make(chan struct{})
	go func() {
		view.Wait()
		close(stopped)
	}()
	select {
	case <-signals:
	case <-stopped:
	}
	return view.Unmount()
}

func umountCmd(fs *pflag.FlagSet) runFunc {
	return func(pos []string) error {
		return fusefs.Unmount(pos[0])
	}
}
