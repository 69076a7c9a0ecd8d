// Package cairn is the embedded Go API of Cairn, a document database that
// speaks the MongoDB wire protocol.
package cairn
