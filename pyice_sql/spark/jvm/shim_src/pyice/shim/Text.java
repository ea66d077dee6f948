package pyice.shim;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Base64;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.spark.sql.Dataset;

/**
 * Text results of the shim handed to Python in pieces that each fit one py4j answer of at most 8 KB.
 *
 * <p>py4j writes a longer answer to its socket in more than one write, and Nagle's algorithm holds the last
 * write back until the Python side acknowledges the first, which Linux delays by ~40 ms: on loopback every answer
 * between 8 KB and ~64 KB took 44 ms, whatever the work behind it (measured). A statement meets several such
 * answers (the footers of the files it wrote, the listing of a scan's files, each manifest read through Hadoop).
 * A text of up to {@link #PIECES} pieces is therefore fetched piece by piece (a round trip is ~0.2 ms); a longer
 * one whole, where one wait is small beside the transfer.
 *
 * <p>{@link #call} and {@link #callBytes} run a static method of the shim by name (as the bridge does) and
 * return its result itself when it fits one answer, else a {@code Text} to read with {@link #next}.
 */
public final class Text {
    /** Characters per piece: py4j sends at most 3 bytes per UTF-16 unit (UTF-8, or an escape). */
    static final int PIECE = 2700;
    /** Bytes per piece of a byte[] result: sent as base64, 4 characters per 3 bytes. */
    static final int BYTES_PIECE = 6000;
    static final int PIECES = 64;
    /** The static methods already looked up, by "class.name/arity" (the lookup the bridge caches too). */
    private static final Map<String, Method> METHODS = new ConcurrentHashMap<>();

    private final String text;
    private final int piece;
    private int at;

    private Text(String text, int piece) {
        this.text = text;
        this.piece = piece;
    }

    /** The String result of static method {@code name} of shim class {@code cls}: itself when short, else a Text. */
    public static Object call(String cls, String name, Object[] args) throws Throwable {
        return of((String) invoke(cls, name, args));
    }

    /** The byte[] result of {@code cls.name(args)}: itself when short, else a Text of its base64. */
    public static Object callBytes(String cls, String name, Object[] args) throws Throwable {
        byte[] bytes = (byte[]) invoke(cls, name, args);
        if (bytes == null || bytes.length <= BYTES_PIECE) {
            return bytes;
        }
        return new Text(Base64.getEncoder().encodeToString(bytes), BYTES_PIECE / 3 * 4);
    }

    /** The JSON of {@code frame}'s schema: itself when short, else a Text (a wide table's passes 8 KB). */
    public static Object schemaJson(Dataset<?> frame) {
        return of(frame.schema().json());
    }

    /** {@code items} joined by {@code separator}: itself when short, else a Text. */
    public static Object joined(String[] items, String separator) {
        return of(String.join(separator, items));
    }

    private static Object of(String text) {
        return text == null || text.length() <= PIECE ? text : new Text(text, PIECE);
    }

    /** The next piece, null after the last: the rest whole once the text is longer than {@link #PIECES} pieces. */
    public String next() {
        if (at >= text.length()) {
            return null;
        }
        int end = text.length() > (long) piece * PIECES ? text.length() : Math.min(text.length(), at + piece);
        if (end < text.length() && Character.isHighSurrogate(text.charAt(end - 1))) {
            end--; // never split a surrogate pair: py4j could not encode its halves
        }
        String out = text.substring(at, end);
        at = end;
        return out;
    }

    private static Object invoke(String cls, String name, Object[] args) throws Throwable {
        Method method = METHODS.get(cls + "." + name + "/" + args.length);
        if (method == null) {
            Class<?> klass = Class.forName("pyice.shim." + cls, true, Text.class.getClassLoader());
            for (Method m : klass.getMethods()) {
                if (Modifier.isStatic(m.getModifiers())) {
                    METHODS.putIfAbsent(cls + "." + m.getName() + "/" + m.getParameterCount(), m);
                }
            }
            method = METHODS.get(cls + "." + name + "/" + args.length);
        }
        if (method == null) {
            throw new NoSuchMethodException("no static method " + cls + "." + name + " with " + args.length
                + " parameters in the shim");
        }
        try {
            return method.invoke(null, args);
        } catch (InvocationTargetException e) {
            throw e.getCause(); // the method's own exception, as a direct call would raise it
        }
    }
}
