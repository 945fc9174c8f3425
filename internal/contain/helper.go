package contain

import (
	"strconv"

	"github.com/murmur-go/murmur/internal/version"
)

// HelperName is the lean helper binary mur looks for beside itself
// (cmd/mur-contain): the same init helper, without the rest of mur to
// start.
const HelperName = "mur-contain"

// helperProtocol numbers the job's shape; change it with the job.
const helperProtocol = 1

// HelperStamp identifies this build's helper protocol: a helper binary is
// used only when its --version says exactly the stamp of the running mur.
func HelperStamp() string {
	return "protocol " + strconv.Itoa(helperProtocol) + " " + version.Revision()
}
