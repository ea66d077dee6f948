package pyice.shim;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

/**
 * Handshake for the Python bridge: {@link #version()} is {@code <API>+<build id>}, where the build id is the
 * digest of the Java sources that the bridge (pyice_sql/spark/jvm/bridge.py) writes into the jar as
 * {@code pyice/shim/build-id.txt}. Python refuses a jar whose version differs from the sources it ships.
 */
public final class Shim {
    /** Bumped on incompatible changes to the static methods the bridge calls. */
    public static final String API = "1";

    private Shim() {}

    public static String version() {
        return API + "+" + buildId();
    }

    static String buildId() {
        try (InputStream in = Shim.class.getResourceAsStream("build-id.txt")) {
            if (in == null) {
                return "unknown";
            }
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] buf = new byte[256];
            for (int n; (n = in.read(buf)) > 0; ) {
                out.write(buf, 0, n);
            }
            return new String(out.toByteArray(), StandardCharsets.UTF_8).trim();
        } catch (IOException e) {
            return "unknown";
        }
    }
}
