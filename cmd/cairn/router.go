package main

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/cairndb/cairn/internal/audit"
	"github.com/cairndb/cairn/internal/auth"
	"github.com/cairndb/cairn/internal/config"
	"github.com/cairndb/cairn/internal/router"
)

// routerCommand is `cairn router`: a mongos of a sharded cluster.
func routerCommand(stdout, stderr io.Writer) *cobra.Command {
	var configDB, bind, keyFile string
	var port int
	tlsOpts := config.TLS{Mode: config.TLSDisabled}
	var auditOpts config.Audit
	cmd := &cobra.Command{
		Use:   "router --configdb <set>/<host:port>,...",
		Short: "Route a sharded cluster's clients (a mongos)",
		Long: `router accepts MongoDB clients and routes their commands to the shards of a
sharded cluster by the routing table it reads from the config servers
(--configdb, a replica set started with --configsvr). It keeps no data: run as
many as you like. With --keyFile (the members' key), it authenticates to every
member as the internal user and requires its own clients to authenticate, as
mongos does. The --tls options are mongod's: what the router's clients connect
with and, under preferTLS and requireTLS, how it connects to the members (its
certificate presented, theirs checked against --tlsCAFile). The --audit options
are mongod's too: the router audits its clients' authentications, refused
commands, and the user, role and DDL commands it runs.`,
		Args: noArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			if configDB == "" {
				return usageError{fmt.Errorf("--configdb is required")}
			}
			if err := tlsOpts.Validate(); err != nil {
				return usageError{err}
			}
			listenTLS, memberTLS, err := loadTLS(tlsOpts)
			if err != nil {
				return err
			}
			auditLog, err := audit.Open(audit.Options{Destination: auditOpts.Destination, Format: auditOpts.Format, Path: auditOpts.Path,
				Filter: auditOpts.Filter, Local: net.JoinHostPort(bind, strconv.Itoa(port))})
			if err != nil {
				return err
			}
			defer auditLog.Close()
			log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
			var key []byte
			if keyFile != "" {
				k, err := auth.ReadKeyFile(keyFile)
				if err != nil {
					return fmt.Errorf("--keyFile: %w", err)
				}
				key = k
			}
			r, err := router.New(router.Options{ConfigDB: configDB, Key: key, Listener: listenTLS, TLS: memberTLS, Audit: auditLog, Logger: log})
			if err != nil {
				return err
			}
			if err := r.Listen(net.JoinHostPort(bind, strconv.Itoa(port))); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "cairn router listening on %s (config servers %s, tlsMode %s)\n", r.Addr(), configDB, tlsOpts.Mode)
			sigs := make(chan os.Signal, 1)
			signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
			go func() {
				<-sigs
				_ = r.Close()
			}()
			return r.Serve()
		},
	}
	cmd.Flags().StringVar(&configDB, "configdb", "", "the config server replica set, <set>/<host:port>,...")
	cmd.Flags().IntVar(&port, "port", 27017, "port to listen on")
	cmd.Flags().StringVar(&bind, "bind_ip", "127.0.0.1", "address to listen on")
	cmd.Flags().StringVar(&keyFile, "keyFile", "", "the cluster's shared key (as the members' --keyFile): the router reaches every member as __system with it, and clients must authenticate (as the users the config servers hold) and hold the privileges of what they run")
	cmd.Flags().StringVar(&tlsOpts.Mode, "tlsMode", config.TLSDisabled, "disabled (default), allowTLS, preferTLS or requireTLS: whether clients may, should or must connect with TLS; with preferTLS and requireTLS the router connects to the members with TLS")
	cmd.Flags().StringVar(&tlsOpts.CertificateKeyFile, "tlsCertificateKeyFile", "", "PEM file with the router's certificate and its private key (also presented to the members)")
	cmd.Flags().StringVar(&tlsOpts.CAFile, "tlsCAFile", "", "PEM file of the certificate authorities that client and member certificates are checked against")
	cmd.Flags().BoolVar(&tlsOpts.AllowConnectionsWithoutCertificates, "tlsAllowConnectionsWithoutCertificates", false, "with --tlsCAFile, let clients without a certificate connect too")
	cmd.Flags().BoolVar(&tlsOpts.AllowInvalidCertificates, "tlsAllowInvalidCertificates", false, "accept certificates that do not verify (development only)")
	cmd.Flags().StringVar(&auditOpts.Destination, "auditDestination", "", "write an audit log (authentication, authorization failures, user and role changes, DDL; a MongoDB Enterprise feature) to file, console or syslog")
	cmd.Flags().StringVar(&auditOpts.Format, "auditFormat", "", "the audit file's format: JSON lines (default) or BSON documents")
	cmd.Flags().StringVar(&auditOpts.Path, "auditPath", "", "the audit file, for --auditDestination file")
	cmd.Flags().StringVar(&auditOpts.Filter, "auditFilter", "", "a query document selecting the events audited, in extended JSON (default: all)")
	return cmd
}
