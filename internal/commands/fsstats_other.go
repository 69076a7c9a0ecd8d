//go:build !unix

package commands

// fsSizes is unavailable off Unix; dbStats then omits the fs fields.
func fsSizes(string) (used, total int64, ok bool) { return 0, 0, false }
