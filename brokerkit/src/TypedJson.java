import java.util.ArrayList;
import java.util.Base64;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import javax.jms.MessageEOFException;

import org.apache.activemq.command.ActiveMQBytesMessage;
import org.apache.activemq.command.ActiveMQDestination;
import org.apache.activemq.command.ActiveMQMapMessage;
import org.apache.activemq.command.ActiveMQMessage;
import org.apache.activemq.command.ActiveMQObjectMessage;
import org.apache.activemq.command.ActiveMQStreamMessage;
import org.apache.activemq.command.ActiveMQTextMessage;
import org.apache.activemq.command.Message;

/**
 * A message as typed JSON, the way the Go tests of kahafs's OpenWire decoder read it back
 * (testdata/stores/messages/messages.json). Every value carries its Java type:
 *
 *   {"type":"int","value":5}     null boolean byte short int long string: value as JSON
 *   {"type":"char","value":65}   the UTF-16 code unit
 *   {"type":"float","value":1.5,"bits":1069547520}    bits: Float.floatToRawIntBits / Double.doubleToRawLongBits
 *   {"type":"bytes","value":"AAEC"}                   base64
 *   {"type":"map","value":{"k":{...}}}, {"type":"list","value":[{...}]}
 *
 * Body: {"type":"none"} | {"type":"text","text":...} | {"type":"bytes","base64":...} |
 * {"type":"map","value":{...}} | {"type":"stream","value":[...]} | {"type":"object","className":...}.
 *
 * A string or byte array longer than BIG (text and bytes bodies included) is recorded by its size and
 * SHA-256 instead: {"type":"string","size":9000,"sha256":"..."} (size and digest of its UTF-8 bytes),
 * {"type":"text","size":20000,"sha256":"..."}, {"type":"bytes","size":6000,"sha256":"..."}.
 */
final class TypedJson {
    private TypedJson() {}

    static final int BIG = 1024;

    static String sha256(byte[] b) {
        try {
            StringBuilder sb = new StringBuilder();
            for (byte x : java.security.MessageDigest.getInstance("SHA-256").digest(b)) sb.append(String.format("%02x", x));
            return sb.toString();
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Puts a string as key (or, when big, its size and digest). */
    static void putText(Map<String, Object> m, String key, String s) {
        byte[] utf8 = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        if (utf8.length <= BIG) {
            m.put(key, s);
            return;
        }
        m.put("size", utf8.length);
        m.put("sha256", sha256(utf8));
    }

    /** Puts bytes as key in base64 (or, when big, their size and digest). */
    static void putBytes(Map<String, Object> m, String key, byte[] b) {
        if (b.length <= BIG) {
            m.put(key, Base64.getEncoder().encodeToString(b));
            return;
        }
        m.put("size", b.length);
        m.put("sha256", sha256(b));
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> value(Object v) {
        Map<String, Object> m = new LinkedHashMap<>();
        if (v == null) {
            m.put("type", "null");
        } else if (v instanceof Boolean) {
            m.put("type", "boolean");
            m.put("value", v);
        } else if (v instanceof Byte) {
            m.put("type", "byte");
            m.put("value", ((Byte) v).intValue());
        } else if (v instanceof Short) {
            m.put("type", "short");
            m.put("value", ((Short) v).intValue());
        } else if (v instanceof Character) {
            m.put("type", "char");
            m.put("value", (int) (Character) v);
        } else if (v instanceof Integer) {
            m.put("type", "int");
            m.put("value", v);
        } else if (v instanceof Long) {
            m.put("type", "long");
            m.put("value", v);
        } else if (v instanceof Float) {
            m.put("type", "float");
            m.put("value", v);
            m.put("bits", Float.floatToRawIntBits((Float) v));
        } else if (v instanceof Double) {
            m.put("type", "double");
            m.put("value", v);
            m.put("bits", Double.doubleToRawLongBits((Double) v));
        } else if (v instanceof byte[]) {
            m.put("type", "bytes");
            putBytes(m, "value", (byte[]) v);
        } else if (v instanceof Map) {
            Map<String, Object> inner = new LinkedHashMap<>();
            for (Map.Entry<String, Object> e : ((Map<String, Object>) v).entrySet()) inner.put(e.getKey(), value(e.getValue()));
            m.put("type", "map");
            m.put("value", inner);
        } else if (v instanceof List) {
            List<Object> inner = new ArrayList<>();
            for (Object o : (List<Object>) v) inner.add(value(o));
            m.put("type", "list");
            m.put("value", inner);
        } else {
            // String, and hawtbuf's UTF8Buffer (how unmarshalled properties hold strings)
            m.put("type", "string");
            putText(m, "value", v.toString());
        }
        return m;
    }

    static Map<String, Object> values(Map<String, Object> props) {
        Map<String, Object> out = new LinkedHashMap<>();
        if (props != null) {
            for (Map.Entry<String, Object> e : props.entrySet()) out.put(e.getKey(), value(e.getValue()));
        }
        return out;
    }

    static String dest(ActiveMQDestination d) {
        return d == null ? null : d.getQualifiedName();
    }

    static String str(Object o) {
        return o == null ? null : o.toString();
    }

    /** The header fields of a message as the broker holds them. */
    static Map<String, Object> headers(Message m) {
        Map<String, Object> h = new LinkedHashMap<>();
        h.put("dataStructureType", (int) m.getDataStructureType());
        h.put("messageId", str(m.getMessageId()));
        h.put("producerId", str(m.getProducerId()));
        h.put("destination", dest(m.getDestination()));
        h.put("originalDestination", dest(m.getOriginalDestination()));
        h.put("transactionId", str(m.getTransactionId()));
        h.put("originalTransactionId", str(m.getOriginalTransactionId()));
        h.put("groupId", m.getGroupID());
        h.put("groupSequence", m.getGroupSequence());
        h.put("correlationId", m.getCorrelationId());
        h.put("persistent", m.isPersistent());
        h.put("expiration", m.getExpiration());
        h.put("priority", (int) m.getPriority());
        h.put("replyTo", dest(m.getReplyTo()));
        h.put("timestamp", m.getTimestamp());
        h.put("type", m.getType());
        h.put("compressed", m.isCompressed());
        h.put("redeliveryCounter", m.getRedeliveryCounter());
        h.put("arrival", m.getArrival());
        h.put("userId", m.getUserID());
        h.put("brokerInTime", m.getBrokerInTime());
        h.put("brokerOutTime", m.getBrokerOutTime());
        h.put("contentSize", m.getContent() == null ? -1 : m.getContent().getLength());
        return h;
    }

    /** The body, decoded by the client classes themselves. */
    static Map<String, Object> body(Message msg) throws Exception {
        Map<String, Object> b = new LinkedHashMap<>();
        if (msg instanceof ActiveMQTextMessage) {
            String text = ((ActiveMQTextMessage) msg).getText();
            b.put("type", text == null ? "none" : "text");
            if (text != null) putText(b, "text", text);
        } else if (msg instanceof ActiveMQBytesMessage) {
            ActiveMQBytesMessage m = (ActiveMQBytesMessage) msg;
            m.setReadOnlyBody(true);
            byte[] data = new byte[(int) m.getBodyLength()];
            m.readBytes(data);
            b.put("type", "bytes");
            putBytes(b, "base64", data);
        } else if (msg instanceof ActiveMQMapMessage) {
            ActiveMQMapMessage m = (ActiveMQMapMessage) msg;
            Map<String, Object> map = new LinkedHashMap<>();
            for (Enumeration<?> e = m.getMapNames(); e.hasMoreElements();) {
                String n = (String) e.nextElement();
                map.put(n, m.getObject(n));
            }
            b.put("type", "map");
            b.put("value", values(map));
        } else if (msg instanceof ActiveMQStreamMessage) {
            ActiveMQStreamMessage m = (ActiveMQStreamMessage) msg;
            m.setReadOnlyBody(true);
            m.reset();
            List<Object> items = new ArrayList<>();
            while (true) {
                try {
                    items.add(value(m.readObject()));
                } catch (MessageEOFException eof) {
                    break;
                }
            }
            b.put("type", "stream");
            b.put("value", items);
        } else if (msg instanceof ActiveMQObjectMessage) {
            ActiveMQObjectMessage m = (ActiveMQObjectMessage) msg;
            m.setTrustAllPackages(true);
            Object o = m.getObject();
            b.put("type", o == null ? "none" : "object");
            if (o != null) {
                b.put("className", o.getClass().getName());
                b.put("toString", o.toString());
            }
        } else if (msg instanceof ActiveMQMessage) {
            b.put("type", "none");
        } else {
            b.put("type", "unknown:" + msg.getClass().getName());
        }
        return b;
    }

    /** headers, properties and body of a message as the broker holds it. */
    static Map<String, Object> message(Message m) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("headers", headers(m));
        out.put("properties", values(m.getProperties()));
        out.put("body", body(m));
        return out;
    }
}
