package config

import (
	"fmt"
	"sort"
	"strings"
)

// unsupportedKeys are mongod config file keys (a key covers everything under
// it) that Cairn does not honour, each with the reason given when one is
// used: refused, never silently ignored (invariant "Accepted means
// honoured").
var unsupportedKeys = map[string]string{
	"replication":                      "only replSetName and oplogSizeMB are supported",
	"sharding":                         "only clusterRole (configsvr or shardsvr) is supported",
	"processManagement.fork":           "Cairn does not fork; run it under a service manager (systemd, a container) instead",
	"processManagement.windowsService": "Cairn does not run as a Windows service",
	"storage.journal":                  "journaling is always on: every acknowledged write is in the write-ahead log (cairn.sync chooses when it is synced)",
	"storage.engine":                   "Cairn's storage engine is Pebble and cannot be changed",
	"storage.directoryPerDB":           "Cairn keeps every database in one Pebble store",
	"storage.syncPeriodSecs":           "use cairn.sync (--sync) to choose how writes are synced",
	"storage.inMemory":                 "Cairn has no in-memory storage engine",
	"storage.oplogMinRetentionHours":   "there is no oplog in this build of Cairn",
	"storage.wiredTiger.engineConfig.journalCompressor":    "Cairn's storage engine is Pebble: only cacheSizeGB applies",
	"storage.wiredTiger.engineConfig.directoryForIndexes":  "Cairn's storage engine is Pebble: only cacheSizeGB applies",
	"storage.wiredTiger.engineConfig.zstdCompressionLevel": "Cairn's storage engine is Pebble: only cacheSizeGB applies",
	"storage.wiredTiger.collectionConfig":                  "Cairn's storage engine is Pebble: only engineConfig.cacheSizeGB applies",
	"storage.wiredTiger.indexConfig":                       "Cairn's storage engine is Pebble: only engineConfig.cacheSizeGB applies",
	"net.unixDomainSocket":                                 "Cairn listens on TCP only",
	"net.ipv6":                                             "give an IPv6 address to net.bindIp instead",
	"net.serviceExecutor":                                  "Cairn serves each connection on its own goroutine",
	"net.tls.certificateKeyFilePassword":                   "Cairn reads unencrypted PEM keys only",
	"net.tls.clusterFile":                                  "members authenticate with security.keyFile (x.509 member certificates are not supported)",
	"net.tls.clusterCAFile":                                "members authenticate with security.keyFile (x.509 member certificates are not supported)",
	"net.tls.CRLFile":                                      "certificate revocation lists are not supported",
	"net.tls.allowInvalidHostnames":                        "members always check that a peer's certificate names the host they reach it by",
	"net.tls.disabledProtocols":                            "Cairn accepts TLS 1.2 and 1.3 only",
	"net.tls.FIPSMode":                                     "FIPS mode is not supported",
	"net.tls.certificateSelector":                          "read the certificate from net.tls.certificateKeyFile",
	"net.ssl":                                              "use net.tls (the net.ssl options were renamed in MongoDB 4.2)",
	"security.clusterAuthMode":                             "members authenticate with security.keyFile (x.509 member certificates are not supported)",
	"security.transitionToAuth":                            "not supported: use security.authorization",
	"security.javascriptEnabled":                           "Cairn runs no server-side JavaScript",
	"security.enableEncryption":                            "encryption at rest is not supported",
	"security.redactClientLogData":                         "not supported",
	"security.sasl":                                        "only SCRAM-SHA-256 and SCRAM-SHA-1 are supported",
	"security.ldap":                                        "LDAP is not supported",
	"systemLog.timeStampFormat":                            "log times are always ISO-8601 in UTC",
	"systemLog.component":                                  "per-component verbosity is not supported: use systemLog.verbosity",
	"systemLog.syslogFacility":                             "syslog is not supported: log to a file",
	"systemLog.traceAllExceptions":                         "not supported",
	"operationProfiling.filter":                            "set a filter with the profile command",
	"snmp":                                                 "SNMP is not supported",
	"cloud":                                                "free monitoring is not supported",
}

// unsupportedFlags are mongod command-line options Cairn does not honour,
// with the reason.
var unsupportedFlags = map[string]string{
	"fork":                                unsupportedKeys["processManagement.fork"],
	"clusterAuthMode":                     unsupportedKeys["security.clusterAuthMode"],
	"transitionToAuth":                    unsupportedKeys["security.transitionToAuth"],
	"journal":                             unsupportedKeys["storage.journal"],
	"nojournal":                           unsupportedKeys["storage.journal"],
	"directoryperdb":                      unsupportedKeys["storage.directoryPerDB"],
	"storageEngine":                       unsupportedKeys["storage.engine"],
	"syncdelay":                           unsupportedKeys["storage.syncPeriodSecs"],
	"wiredTigerJournalCompressor":         unsupportedKeys["storage.wiredTiger.engineConfig.journalCompressor"],
	"wiredTigerCollectionBlockCompressor": unsupportedKeys["storage.wiredTiger.collectionConfig"],
	"wiredTigerIndexPrefixCompression":    unsupportedKeys["storage.wiredTiger.indexConfig"],
	"wiredTigerDirectoryForIndexes":       unsupportedKeys["storage.wiredTiger.engineConfig.directoryForIndexes"],
	"syslog":                              unsupportedKeys["systemLog.syslogFacility"],
	"syslogFacility":                      unsupportedKeys["systemLog.syslogFacility"],
	"timeStampFormat":                     unsupportedKeys["systemLog.timeStampFormat"],
	"ipv6":                                unsupportedKeys["net.ipv6"],
	"unixSocketPrefix":                    unsupportedKeys["net.unixDomainSocket"],
	"nounixsocket":                        unsupportedKeys["net.unixDomainSocket"],
	"filePermissions":                     unsupportedKeys["net.unixDomainSocket"],
	"tlsCertificateKeyFilePassword":       unsupportedKeys["net.tls.certificateKeyFilePassword"],
	"tlsClusterFile":                      unsupportedKeys["net.tls.clusterFile"],
	"tlsClusterCAFile":                    unsupportedKeys["net.tls.clusterCAFile"],
	"tlsCRLFile":                          unsupportedKeys["net.tls.CRLFile"],
	"tlsAllowInvalidHostnames":            unsupportedKeys["net.tls.allowInvalidHostnames"],
	"tlsDisabledProtocols":                unsupportedKeys["net.tls.disabledProtocols"],
	"tlsFIPSMode":                         unsupportedKeys["net.tls.FIPSMode"],
	"sslMode":                             unsupportedKeys["net.ssl"],
	"sslPEMKeyFile":                       unsupportedKeys["net.ssl"],
	"sslCAFile":                           unsupportedKeys["net.ssl"],
	"sslAllowInvalidCertificates":         unsupportedKeys["net.ssl"],
	"noscripting":                         unsupportedKeys["security.javascriptEnabled"],
	"enableEncryption":                    unsupportedKeys["security.enableEncryption"],
	"redactClientLogData":                 unsupportedKeys["security.redactClientLogData"],
	"repair":                              "Cairn has no repair mode; restore from a backup",
	"upgrade":                             "Cairn needs no upgrade step",
	"sysinfo":                             "use the hostInfo command",
	"notablescan":                         "not supported",
	"enableMajorityReadConcern":           unsupportedKeys["replication"],
	"serviceExecutor":                     unsupportedKeys["net.serviceExecutor"],
	"inMemorySizeGB":                      unsupportedKeys["storage.inMemory"],
	"install":                             unsupportedKeys["processManagement.windowsService"],
	"remove":                              unsupportedKeys["processManagement.windowsService"],
	"service":                             unsupportedKeys["processManagement.windowsService"],
}

// optionUnder reports whether some supported option lies under the section
// path (replication.oplogSizeMB under replication): the section is then
// walked and each of its other keys refused on its own.
func optionUnder(path string) bool {
	for _, o := range options {
		if strings.HasPrefix(o.path, path+".") {
			return true
		}
	}
	return false
}

// unsupported returns the refusal for a mongod key Cairn does not honour, or
// nil.
func unsupported(path string) error {
	for p := path; p != ""; {
		if why, ok := unsupportedKeys[p]; ok {
			return fmt.Errorf("%s is not supported by Cairn: %s", path, why)
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return nil
}

// UnsupportedFlag returns the refusal for a mongod flag Cairn does not
// honour, or nil.
func UnsupportedFlag(name string) error {
	if why, ok := unsupportedFlags[name]; ok {
		return fmt.Errorf("--%s is mongod's, but Cairn does not support it: %s", name, why)
	}
	return nil
}

// unknownKey is the error for a key no one has, naming the nearest valid
// one when it is close.
func unknownKey(path string) error {
	var all []string
	for _, opt := range options {
		for p := opt.path; p != ""; {
			all = append(all, p)
			i := strings.LastIndexByte(p, '.')
			if i < 0 {
				break
			}
			p = p[:i]
		}
	}
	if n := Nearest(path, all); n != "" {
		return fmt.Errorf("unrecognized option: %s (did you mean %s?)", path, n)
	}
	return fmt.Errorf("unrecognized option: %s", path)
}

// FlagNames lists every flag name Cairn accepts, for suggestions.
func FlagNames() []string {
	var all []string
	for _, opt := range options {
		all = append(all, opt.flags...)
	}
	sort.Strings(all)
	return all
}

// Nearest returns the candidate closest to s by edit distance (case
// ignored), or "" when none is within a third of s's length.
func Nearest(s string, candidates []string) string {
	best, bestD := "", len(s)/3+1
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(s), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is Levenshtein's distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
