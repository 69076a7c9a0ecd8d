// Package audit owns the audit log: events in MongoDB's audit message
// shape ({atype, ts, uuid, local, remote, users, roles, param, result}),
// the filter that selects them (--auditFilter, a query document matched
// against each event) and the destinations that receive them (a file of
// JSON lines or of BSON documents, standard output, or syslog).
//
// MongoDB keeps auditing for its Enterprise edition (mongod's
// auditLog.destination, auditLog.format, auditLog.path and auditLog.filter
// options, or --auditDestination, --auditFormat, --auditPath and
// --auditFilter); Cairn takes the same options.
//
// Invariants:
//
//   - "Written before answered": Write returns once the event is in the
//     destination's writer (the file is written, not synced: as mongod's
//     default); the command layer writes an event before it sends the
//     reply of the command it describes (TestAuditFile).
//   - "Secrets stay out": no event carries a password; the command layer
//     leaves out the arguments of commands that carry one.
//   - "Filter first": an event the filter does not match costs its
//     building and one match, and is written nowhere (TestAuditFilter).
//
// Deviations from MongoDB: the BSON format writes documents one after
// another, as mongod, but without its runtime auditConfig changes
// (setAuditConfig is not supported); syslog receives JSON only (as
// mongod's). Not yet audited: a collection created implicitly by a write
// (mongod audits it as createCollection), logout, replica set
// reconfiguration, and successful authorization checks
// (auditAuthorizationSuccess).
package audit
