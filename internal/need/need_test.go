package need

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestSkipOrFail runs the helpers in a child test process, with and without
// CI=true: outside CI a missing dependency skips, naming it; under CI it
// fails, naming it; nothing missing runs on.
func TestSkipOrFail(t *testing.T) {
	if os.Getenv("NEED_CHILD") != "" {
		return
	}
	for _, tc := range []struct {
		child, ci, want string
		fails           bool
	}{
		{"TestChildFUSE", "", "--- SKIP: TestChildFUSE", false},
		{"TestChildFUSE", "true", "--- FAIL: TestChildFUSE", true},
		{"TestChildSkip", "", "--- SKIP: TestChildSkip", false},
		{"TestChildSkip", "true", "--- FAIL: TestChildSkip", true},
		{"TestChildSkip", "false", "--- SKIP: TestChildSkip", false},
		{"TestChildPresent", "true", "--- PASS: TestChildPresent", false},
	} {
		cmd := exec.Command(os.Args[0], "-test.run", "^"+tc.child+"$", "-test.v")
		cmd.Env = append(os.Environ(), "NEED_CHILD=1", "CI="+tc.ci)
		out, err := cmd.CombinedOutput()
		if (err != nil) != tc.fails {
			t.Errorf("%s CI=%q: exit %v, want failure %v\n%s", tc.child, tc.ci, err, tc.fails, out)
		}
		if !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), "no /dev/fuse here") {
			t.Errorf("%s CI=%q: want %q and the reason in\n%s", tc.child, tc.ci, tc.want, out)
		}
	}
}

func TestChildFUSE(t *testing.T) {
	if os.Getenv("NEED_CHILD") == "" {
		t.Skip("run by TestSkipOrFail")
	}
	FUSE(t, errors.New("no /dev/fuse here"))
	t.Log("still running")
}

func TestChildSkip(t *testing.T) {
	if os.Getenv("NEED_CHILD") == "" {
		t.Skip("run by TestSkipOrFail")
	}
	Skip(t, "no /dev/fuse here (%d)", 1)
}

func TestChildPresent(t *testing.T) {
	if os.Getenv("NEED_CHILD") == "" {
		t.Skip("run by TestSkipOrFail")
	}
	FUSE(t, nil)
	t.Log("no /dev/fuse here: not needed")
}
