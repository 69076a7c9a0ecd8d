//go:build windows || plan9

package audit

import (
	"errors"
	"io"
)

func openSyslog() (io.WriteCloser, error) {
	return nil, errors.New("syslog is not available on this system")
}
