// tetherd with the store it is built with: SQLite, or --memory. (The
// etcd build, Backends/Etcd, registers its backend before this same call.)
import TetherdCommand

Tetherd.main()
