import java.net.InetAddress;
import java.net.InetSocketAddress;

import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.IHMSHandler;
import org.apache.hadoop.hive.metastore.TSetIpAddressProcessor;
import org.apache.hadoop.hive.metastore.txn.TxnDbUtil;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.server.TServer;
import org.apache.thrift.server.TThreadPoolServer;
import org.apache.thrift.transport.TServerSocket;
import org.apache.thrift.transport.TTransportFactory;

/**
 * Hive's own metastore handler (HMSHandler, over the RawStore in hive-site.xml) served on
 * 127.0.0.1 only: Hive 2.3's HiveMetaStore main binds every interface and has no bind-host
 * setting, so this launcher does what its non-secure path does, with a loopback socket.
 * The transaction tables are created at start (Hive's TxnDbUtil): commits take locks.
 * Usage: LoopbackMetastore PORT. Prints "READY PORT" once the socket is bound.
 */
public final class LoopbackMetastore {
    private static final int MIN_THREADS = 2;
    private static final int MAX_THREADS = 32;

    private LoopbackMetastore() {
    }

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        HiveConf conf = new HiveConf(HiveMetaStore.HMSHandler.class);
        HiveMetaStore.HMSHandler base =
            new HiveMetaStore.HMSHandler("loopback metastore", conf, false);
        IHMSHandler handler = HiveMetaStore.newRetryingHMSHandler(base, conf, false);
        // DataNucleus creates the metadata tables; the transaction tables behind the lock
        // API (which pyiceberg and Iceberg's HiveCatalog take on every commit) are Hive's own
        // scripts, run here on the fresh database.
        TxnDbUtil.prepDb(conf);
        TServerSocket socket =
            new TServerSocket(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
        TThreadPoolServer.Args serverArgs = new TThreadPoolServer.Args(socket)
            .processor(new TSetIpAddressProcessor<IHMSHandler>(handler))
            .transportFactory(new TTransportFactory())
            .protocolFactory(new TBinaryProtocol.Factory())
            .inputProtocolFactory(new TBinaryProtocol.Factory())
            .minWorkerThreads(MIN_THREADS)
            .maxWorkerThreads(MAX_THREADS);
        TServer server = new TThreadPoolServer(serverArgs);
        System.out.println("READY " + port);
        System.out.flush();
        server.serve();
    }
}
