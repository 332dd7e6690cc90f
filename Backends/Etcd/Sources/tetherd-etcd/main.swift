// tetherd with the etcd backend: the same command as the default build,
// with `--backend etcd:URL[,URL…]` available.
import TetherEtcd
import TetherdCommand

Tetherd.backends["etcd"] = EtcdBackend.self
Tetherd.main()
