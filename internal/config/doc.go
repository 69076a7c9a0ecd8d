// Package config owns the server's startup options: their defaults, the
// double-dash flags and the sections of mongod's YAML configuration file
// that set them, one table (options.go) for both, so a flag and its file key
// cannot drift apart.
//
// The command line (cmd/cairn) records each flag as it is parsed; Load then
// builds the effective Options: defaults, then the config file, then the
// flags in the order given, so a flag overrides the file, as in mongod.
//
// Invariants:
//
//   - "Accepted means honoured": every key and flag in the table sets a field
//     the server acts on. A key or flag mongod has and Cairn does not honour is
//     refused with its path and the reason (unsupported.go); a key nobody
//     has is refused with its path and, when one is close, the nearest valid
//     key.
//   - "Flags win": for any option set both in the file and on the command
//     line, the command line's value is the effective one (TestFlagsOverrideFile).
//   - "Safe defaults": with no flag and no file the server listens on
//     127.0.0.1 only and acknowledges a write once it is synced (Defaults).
//
// Deviations from MongoDB: systemLog.destination takes only "file" (no
// syslog); YAML anchors and the __rest/__exec expansion directives are not
// supported.
package config
