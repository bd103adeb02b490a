import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;

import org.apache.activemq.store.kahadb.KahaDBPersistenceAdapter;

/**
 * HoldStore STORE_DIR: opens the store with a real KahaDB adapter, as a
 * running broker does (the adapter takes the store's lock), prints
 * "HOLDING <pid>" and keeps it open until standard input closes.
 */
public class HoldStore {
    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: HoldStore STORE_DIR");
            System.exit(2);
        }
        KahaDBPersistenceAdapter a = new KahaDBPersistenceAdapter();
        a.setDirectory(new File(args[0]));
        a.setCheckpointInterval(0);
        a.setCleanupInterval(0);
        a.start();
        System.out.println("HOLDING " + ProcessHandle.current().pid());
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        while (in.readLine() != null) {
            // wait for EOF
        }
        a.stop();
    }
}
