import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import javax.jms.Connection;
import javax.jms.JMSException;
import javax.jms.MessageConsumer;
import javax.jms.Session;
import javax.jms.Topic;

import org.apache.activemq.ActiveMQConnectionFactory;
import org.apache.activemq.command.ActiveMQDestination;
import org.apache.activemq.command.ActiveMQQueue;
import org.apache.activemq.command.ActiveMQTopic;

/**
 * The "hostile" scenario: destination names, durable subscription keys, message ids and transaction ids
 * chosen to escape or confuse a file tree ("../x", "a/b", ".", "..", 300-byte names, control characters,
 * '%', non-ASCII, lone UTF-16 surrogates, the empty name), sent by real clients to a real broker.
 *
 * Every attempt goes first through a TCP connector (what a remote client can do: the name is marshalled
 * with OpenWire and parsed again by the broker), and, when that fails, through the VM transport (an
 * embedded client: the destination object reaches the broker unmarshalled). What the client library or
 * the broker accepted or rejected, and the bytes the journal was expected to hold, go to run.json
 * (notes.attempts); records.json and the Go tests say what the journal actually holds.
 */
final class Hostile {
    private Hostile() {}

    static final int SEND = 2;   // messages sent to every destination
    static final int BODY = 40;  // body length (keeps the store small)

    /** A name to try, with a label for the reports (the name itself may be unprintable). */
    static final class Name {
        final String label;
        final String name;
        final boolean topic;     // also used as a topic (with a durable subscription)
        final int consume;       // messages consumed from the queue / by the subscription

        Name(String label, String name, boolean topic, int consume) {
            this.label = label;
            this.name = name;
            this.topic = topic;
            this.consume = consume;
        }
    }

    static String repeat(String s, int n) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < n; i++) b.append(s);
        return b.toString();
    }

    static List<Name> names() {
        List<Name> l = new ArrayList<>();
        l.add(new Name("dotdot-slash-x", "../x", true, 1));
        l.add(new Name("a-slash-b", "a/b", true, 0));
        l.add(new Name("a-pct2F-b (the escaped spelling of a/b)", "a%2Fb", false, 0));
        l.add(new Name("dot", ".", true, 1));
        l.add(new Name("dotdot", "..", true, 0));
        l.add(new Name("hidden", ".hidden", false, 1));
        l.add(new Name("deep traversal", "../../../../etc/passwd", false, 0));
        l.add(new Name("300 bytes ASCII", repeat("L", 300), true, 1));
        l.add(new Name("300 bytes ASCII, last byte differs", repeat("L", 299) + "M", false, 0));
        l.add(new Name("300 bytes non-ASCII (150 x U+00FC)", repeat("\u00fc", 150), false, 0));
        l.add(new Name("100 x U+0001 inside (300 bytes escaped)", "c" + repeat("\u0001", 100) + "z", false, 1));
        l.add(new Name("control characters", "ctl\u0001\n\r\u001b\u007fend", true, 0));
        l.add(new Name("NUL inside", "nul\u0000in", false, 1));
        l.add(new Name("tab inside", "tab\tin", false, 0));
        l.add(new Name("leading/trailing control and space (trimmed)", "\u0001 pad\u0002 ", false, 0));
        l.add(new Name("space inside", "with space", true, 0));
        l.add(new Name("percent", "100%", true, 1));
        l.add(new Name("percent alone", "%", false, 0));
        l.add(new Name("looks escaped", "%2E%2E", false, 0));
        l.add(new Name("looks like a duplicate marker", "x%~2", false, 0));
        l.add(new Name("looks like a hash marker", "x%#0123456789abcdef0123456789abcdef", false, 0));
        l.add(new Name("non-ASCII", "\u00e9\u6f22\u5b57\u03a9", true, 1));
        l.add(new Name("emoji (surrogate pair)", "emoji\ud83d\ude00", false, 0));
        l.add(new Name("zero-width space", "zw\u200bsp", false, 0));
        l.add(new Name("no-break space", "nb\u00a0sp", false, 0));
        l.add(new Name("right-to-left override", "rtl\u202eevil", false, 0));
        l.add(new Name("lone high surrogate", "hi\ud800", true, 0));
        l.add(new Name("another lone high surrogate", "hi\udbff", false, 0));
        l.add(new Name("lone low surrogate", "lo\udc00x", false, 1));
        l.add(new Name("empty (new ActiveMQQueue(\"\"))", "", true, 0));
        l.add(new Name("empty via options (\"?\" -> physical name \"\")", "?", true, 0));
        l.add(new Name("whitespace only", " \t ", false, 0));
        return l;
    }

    /**
     * Hostile durable subscription of the i-th topic attempt: client id and subscription name. A
     * subscription is identified by both, so every pair is different (subscribing again with a pair on
     * another topic would move the subscription there).
     */
    static String[] subFor(int i) {
        switch (i) {
            case 0: return new String[]{"c/0", "../s0"};
            case 1: return new String[]{"..", "."};
            case 2: return new String[]{"c\u0001" + i, repeat("\u00fc", 130)};
            case 3: return new String[]{"c%" + i, "s%2F" + i};
            case 4: return new String[]{"c\u00e9" + i, "s\u6f22 " + i};
            case 5: return new String[]{".c" + i, "s\u0000" + i};
            case 6: return new String[]{"c " + i, " s" + i + " "};
            default: return new String[]{"c/" + i, "s" + i + "/.."};
        }
    }

    static ActiveMQConnectionFactory tune(ActiveMQConnectionFactory f) {
        f.setWatchTopicAdvisories(false);
        f.setAlwaysSyncSend(true);
        f.setSendAcksAsync(false);
        f.getPrefetchPolicy().setAll(1);
        return f;
    }

    /** Java string as \\uXXXX-escaped ASCII (for logs: the names may be unprintable). */
    static String show(String s) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x20 || c > 0x7e || c == '\\') b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.toString();
    }

    static String hex(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (byte x : b) s.append(String.format("%02x", x & 0xff));
        return s.toString();
    }

    /** UTF-16 code units as hex (exact, unlike JSON for lone surrogates). */
    static String utf16(String s) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < s.length(); i++) b.append(String.format("%04x", (int) s.charAt(i)));
        return b.toString();
    }

    static String err(Throwable t) {
        StringBuilder b = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (b.length() > 0) b.append(" <- ");
            b.append(c.getClass().getName()).append(": ").append(c.getMessage());
            if (c.getCause() == c) break;
        }
        return show(b.toString());
    }

    interface Work {
        void run(Connection c) throws Exception;
    }

    /** Runs work on a fresh connection to url; returns null or the error. */
    static String attempt(String url, String clientId, Work w) {
        Connection c = null;
        try {
            c = tune(new ActiveMQConnectionFactory(url)).createConnection();
            if (clientId != null) c.setClientID(clientId);
            c.start();
            w.run(c);
            return null;
        } catch (Throwable t) {
            return err(t);
        } finally {
            if (c != null) {
                try {
                    c.close();
                } catch (JMSException e) {
                    // a broker that dropped the connection
                }
            }
        }
    }

    static void run(Scenarios.Ctx x) throws Exception {
        x.tcpConnector = true;
        x.start(null);
        String tcp = x.broker.getTransportConnectors().get(0).getPublishableConnectString();
        String vm = "vm://" + x.brokerName + "?create=false";
        x.step("broker with a TCP connector (remote clients: names go through OpenWire marshalling)");

        List<Object> attempts = new ArrayList<>();
        List<Name> names = names();
        int topicNo = 0;
        for (int i = 0; i < names.size(); i++) {
            Name n = names.get(i);
            for (int kind = 0; kind < (n.topic ? 2 : 1); kind++) {
                boolean topic = kind == 1;
                Map<String, Object> a = new LinkedHashMap<>();
                a.put("label", n.label);
                a.put("type", topic ? "topic" : "queue");
                a.put("name", n.name);
                a.put("nameUtf16", utf16(n.name));
                ActiveMQDestination d;
                try {
                    d = topic ? new ActiveMQTopic(n.name) : new ActiveMQQueue(n.name);
                } catch (Throwable t) {
                    a.put("result", "rejected by the client library");
                    a.put("error", err(t));
                    attempts.add(a);
                    x.step("name " + show(n.name) + " (" + n.label + "): rejected by the client library: " + err(t));
                    continue;
                }
                String phys = d.getPhysicalName();
                a.put("physicalName", phys);
                a.put("physicalNameUtf16", utf16(phys));
                // what KahaDB's protobuf string encoding (String.getBytes(UTF-8)) makes of it
                a.put("journalNameHex", hex(phys.getBytes(StandardCharsets.UTF_8)));
                String sub[] = topic ? subFor(topicNo++) : null;
                if (topic) {
                    a.put("clientId", sub[0]);
                    a.put("subscriptionName", sub[1]);
                    a.put("subscriptionKeyHex", hex((sub[0] + ":" + sub[1]).getBytes(StandardCharsets.UTF_8)));
                }
                final int idx = i;
                String via = null;
                String tcpErr = null;
                String vmErr = null;
                for (String url : new String[]{tcp, vm}) {
                    String e;
                    if (topic) {
                        Topic t = (Topic) d;
                        e = attempt(url, sub[0], c -> {
                            Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
                            s.createDurableSubscriber(t, sub[1]).close();
                            s.close();
                        });
                        if (e == null) {
                            e = attempt(url, null, c -> {
                                Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
                                Scenarios.send(s, t, "H" + idx, 0, SEND, BODY, null);
                            });
                        }
                        if (e == null && n.consume > 0) {
                            e = attempt(url, sub[0], c -> {
                                Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
                                MessageConsumer mc = s.createDurableSubscriber(t, sub[1]);
                                Scenarios.receive(mc, n.consume);
                                mc.close();
                            });
                        }
                    } else {
                        e = attempt(url, null, c -> {
                            Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
                            Scenarios.send(s, d, "H" + idx, 0, SEND, BODY, null);
                            if (n.consume > 0) {
                                MessageConsumer mc = s.createConsumer(d);
                                Scenarios.receive(mc, n.consume);
                                mc.close();
                            }
                        });
                    }
                    if (url.equals(tcp)) tcpErr = e;
                    else vmErr = e;
                    if (e == null) {
                        via = url.equals(tcp) ? "tcp" : "vm";
                        break;
                    }
                }
                a.put("tcp", tcpErr == null ? "accepted" : "rejected");
                if (tcpErr != null) a.put("tcpError", tcpErr);
                if (tcpErr != null) {
                    a.put("vm", vmErr == null ? "accepted" : "rejected");
                    if (vmErr != null) a.put("vmError", vmErr);
                }
                a.put("result", via == null ? "rejected by the broker" : "accepted (" + via + ")");
                if (via != null) {
                    a.put("sent", SEND);
                    a.put("consumed", n.consume);
                }
                attempts.add(a);
                x.step((topic ? "topic " : "queue ") + show(n.name) + " (" + n.label + "): " + a.get("result")
                        + (tcpErr != null ? "; tcp: " + tcpErr : "") + (vmErr != null ? "; vm: " + vmErr : ""));
            }
        }

        // Message ids and a local transaction id carrying a hostile connection id prefix.
        String prefix = "../id/%\u00e9\u0001";
        ActiveMQConnectionFactory f = tune(new ActiveMQConnectionFactory(tcp));
        f.setConnectionIDPrefix(prefix);
        Connection c = f.createConnection();
        c.start();
        Session ts = c.createSession(true, Session.SESSION_TRANSACTED);
        ActiveMQQueue ids = new ActiveMQQueue("Q.IDS");
        List<String> sent = Scenarios.send(ts, ids, "Q.IDS", 0, 3, BODY, null);
        ts.commit();
        Session as = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        sent.addAll(Scenarios.send(as, ids, "Q.IDS", 3, 1, BODY, null));
        c.close();
        x.step("Q.IDS: connectionIDPrefix " + show(prefix) + ": 3 sent in a local transaction + commit, 1 sent "
                + "outside; message ids " + show(sent.toString()));
        x.notes.put("messageIdPrefix", prefix);
        x.notes.put("messageIds", sent);
        x.expectQueues.put("Q.IDS", 4);
        x.notes.put("attempts", attempts);

        // The empty name reaches the journal only through the VM transport (new ActiveMQQueue("?") has the
        // physical name ""), and a broker cannot start on a store whose index holds it:
        // KahaDBStore.getDestinations -> new ActiveMQQueue("") -> IllegalArgumentException. Remove those
        // destinations (KAHA_REMOVE_DESTINATION_COMMAND) so that the store stays recoverable; their
        // records stay in the journal.
        for (ActiveMQDestination d : new ActiveMQDestination[]{new ActiveMQQueue("?"), new ActiveMQTopic("?")}) {
            String e = null;
            try {
                if (d.isTopic()) {
                    for (Object o : attempts) {
                        @SuppressWarnings("unchecked")
                        Map<String, Object> a = (Map<String, Object>) o;
                        if (a.get("type").equals("topic") && "".equals(a.get("physicalName")) && a.get("clientId") != null
                                && String.valueOf(a.get("result")).startsWith("accepted")) {
                            String cid = (String) a.get("clientId");
                            String sn = (String) a.get("subscriptionName");
                            e = attempt(vm, cid, cn -> {
                                Session s = cn.createSession(false, Session.AUTO_ACKNOWLEDGE);
                                s.unsubscribe(sn);
                            });
                        }
                    }
                }
                if (e == null) x.broker.removeDestination(d);
            } catch (Throwable t) {
                e = err(t);
            }
            x.step("removeDestination " + (d.isTopic() ? "topic" : "queue") + " \"\" (empty name): "
                    + (e == null ? "done" : "failed: " + e));
            if (e != null) throw new IllegalStateException("removeDestination of the empty name failed: " + e);
        }
        x.notes.put("empty name", "accepted only through the VM transport (new ActiveMQQueue(\"?\"): options are "
                + "stripped after the emptiness check); over TCP the broker fails to unmarshal it and drops the "
                + "connection. A broker cannot start on a store whose index holds an empty destination name "
                + "(KahaDBStore.getDestinations: IllegalArgumentException 'Invalid destination name: a non-empty "
                + "name is required'), so the scenario removes those destinations before it stops.");
        x.notes.put("lone surrogates", "KahaDB writes names with String.getBytes(UTF-8): a lone surrogate becomes "
                + "'?', so hi\\ud800 and hi\\udbff share the journal name hi? (one stored destination). A "
                + "restarted broker lists it as hi (ActiveMQDestination strips '?...' as options) and finds "
                + "no messages under that name. The OpenWire blobs (message, subscription info) use modified UTF-8 "
                + "instead: a lone surrogate is the 3-byte CESU-8 sequence (hi\\ud800 -> 68 69 ed a0 80) and NUL is "
                + "c0 80, while the KahaDB fields hold 3f and 00.");
        x.notes.put("lone surrogate in a subscription name", "not in this store: a durable subscription named "
                + "s\\ud800 is written with the key ...:s? but a restarted broker looks it up with the name from "
                + "the subscription info (lone surrogate kept) and recoverSubscription fails with a "
                + "NullPointerException (MessageOrderIndex.setBatch: lastAckedSequence of null).");
        x.stop();

        // The index is dropped to keep the fixture small (with it the store is ~2.5 MB).
        x.dropIndex();

        // Only names that survive the journal's UTF-8 unchanged are recovered under their own name.
        for (Object o : attempts) {
            @SuppressWarnings("unchecked")
            Map<String, Object> a = (Map<String, Object>) o;
            if (!String.valueOf(a.get("result")).startsWith("accepted")) continue;
            String phys = (String) a.get("physicalName");
            if (phys.isEmpty() || !phys.equals(new String(phys.getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8))) continue;
            int pending = SEND - ((Number) a.get("consumed")).intValue();
            if (a.get("type").equals("queue")) x.expectQueues.put(phys, pending);
            else x.expectSubs.put("topic://" + phys + "|" + a.get("clientId") + ":" + a.get("subscriptionName"), pending);
        }
    }
}
