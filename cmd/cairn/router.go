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

	"github.com/cairndb/cairn/internal/auth"
	"github.com/cairndb/cairn/internal/router"
)

// routerCommand is `cairn router`: a mongos of a sharded cluster.
func routerCommand(stdout, stderr io.Writer) *cobra.Command {
	var configDB, bind, keyFile string
	var port int
	cmd := &cobra.Command{
		Use:   "router --configdb <set>/<host:port>,...",
		Short: "Route a sharded cluster's clients (a mongos)",
		Long: `router accepts MongoDB clients and routes their commands to the shards of a
sharded cluster by the routing table it reads from the config servers
(--configdb, a replica set started with --configsvr). It keeps no data: run as
many as you like. With --keyFile (the members' key), it authenticates to every
member as the internal user and requires its own clients to authenticate, as
mongos does.`,
		Args: noArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			if configDB == "" {
				return usageError{fmt.Errorf("--configdb is required")}
			}
			log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
			var key []byte
			if keyFile != "" {
				k, err := auth.ReadKeyFile(keyFile)
				if err != nil {
					return fmt.Errorf("--keyFile: %w", err)
				}
				key = k
			}
			r, err := router.New(router.Options{ConfigDB: configDB, Key: key, Logger: log})
			if err != nil {
				return err
			}
			if err := r.Listen(net.JoinHostPort(bind, strconv.Itoa(port))); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "cairn router listening on %s (config servers %s)\n", r.Addr(), configDB)
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
	return cmd
}
