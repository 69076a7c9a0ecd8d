//go:build !windows && !plan9

package audit

import (
	"io"
	"log/syslog"
)

func openSyslog() (io.WriteCloser, error) {
	return syslog.New(syslog.LOG_INFO|syslog.LOG_AUTHPRIV, "cairn-audit")
}
