package pyice.shim;

/** Tiny hand-written JSON output helpers (no JSON library is guaranteed on Spark's classpath). */
final class Json {
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private Json() {}

    /** Appends {@code s} as a JSON string literal, or {@code null}. Non-ASCII is written as \\uXXXX escapes. */
    static StringBuilder str(StringBuilder sb, String s) {
        if (s == null) {
            return sb.append("null");
        }
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': sb.append("\\\""); break;
                case '\\': sb.append("\\\\"); break;
                case '\n': sb.append("\\n"); break;
                case '\r': sb.append("\\r"); break;
                case '\t': sb.append("\\t"); break;
                default:
                    if (c < 0x20 || c > 0x7e) {
                        sb.append("\\u")
                          .append(HEX[(c >> 12) & 0xf]).append(HEX[(c >> 8) & 0xf])
                          .append(HEX[(c >> 4) & 0xf]).append(HEX[c & 0xf]);
                    } else {
                        sb.append(c);
                    }
            }
        }
        return sb.append('"');
    }

    /** Appends {@code "key":} (the key is escaped). */
    static StringBuilder key(StringBuilder sb, String key) {
        return str(sb, key).append(':');
    }

    /** Lower-case hex of {@code bytes}, or null. */
    static String hex(byte[] bytes) {
        if (bytes == null) {
            return null;
        }
        char[] out = new char[bytes.length * 2];
        for (int i = 0; i < bytes.length; i++) {
            out[2 * i] = HEX[(bytes[i] >> 4) & 0xf];
            out[2 * i + 1] = HEX[bytes[i] & 0xf];
        }
        return new String(out);
    }
}
