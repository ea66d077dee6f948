package pyice.shim;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import org.apache.avro.file.DataFileStream;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericRecord;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.broadcast.Broadcast;

/**
 * Table maintenance touches many files (orphan listing, expiry deletes, the manifests of every snapshot):
 * these run as one Spark job over the paths, each executor using the Hadoop FileSystem of the path's scheme,
 * so the driver never makes one call per file.
 */
public final class BulkFiles {
    private static final int DELETE = 0;
    private static final int LIST = 1;
    private static final int LIVE_ENTRIES = 2;

    private BulkFiles() {}

    /**
     * Deletes {@code paths} in one Spark job; returns a JSON array of [path, error] for the files that could
     * not be deleted (a file already gone counts as deleted).
     */
    public static String delete(JavaSparkContext jsc, List<String> paths, Configuration conf) throws IOException {
        return run(jsc, paths, conf, DELETE, "delete " + paths.size() + " file(s)");
    }

    /**
     * Lists every file below each of {@code dirs} (recursively) in one Spark job: a JSON array of
     * {"path", "length", "modified", "dir"} objects as {@link FileOps#list} writes them.
     */
    public static String list(JavaSparkContext jsc, List<String> dirs, Configuration conf) throws IOException {
        return run(jsc, dirs, conf, LIST, "list " + dirs.size() + " folder(s)");
    }

    /**
     * Reads Iceberg manifests (Avro) in one Spark job: a JSON array of [file_path, content] for every live
     * (ADDED or EXISTING) entry; content is 0 for data files and for v1 manifests, which have no such field.
     */
    public static String liveEntries(JavaSparkContext jsc, List<String> manifests, Configuration conf)
            throws IOException {
        return run(jsc, manifests, conf, LIVE_ENTRIES, "read " + manifests.size() + " manifest(s)");
    }

    private static String run(JavaSparkContext jsc, List<String> items, Configuration conf, int mode,
                              String what) throws IOException {
        if (items.isEmpty()) {
            return "[]";
        }
        Configuration c = conf != null ? conf : jsc.hadoopConfiguration();
        Broadcast<byte[]> confBytes = FooterStats.ship(jsc, c);
        int slices = Math.max(1, Math.min(items.size(), 2 * jsc.defaultParallelism()));
        String previous = jsc.getLocalProperty("spark.job.description");
        jsc.setJobDescription("pyice_sql: " + what);
        try {
            List<String> out = jsc.parallelize(new ArrayList<>(items), slices)
                .mapPartitions(new Work(confBytes, mode)).collect();
            return "[" + String.join(",", out) + "]";
        } finally {
            jsc.setLocalProperty("spark.job.description", previous);
        }
    }

    private static final class Work implements FlatMapFunction<Iterator<String>, String> {
        private static final long serialVersionUID = 1L;
        private final Broadcast<byte[]> confBytes;
        private final int mode;

        Work(Broadcast<byte[]> confBytes, int mode) {
            this.confBytes = confBytes;
            this.mode = mode;
        }

        @Override
        public Iterator<String> call(Iterator<String> items) throws IOException {
            Configuration conf = FooterStats.fromBroadcast(confBytes);
            List<String> out = new ArrayList<>();
            while (items.hasNext()) {
                String item = items.next();
                Path p = new Path(item);
                FileSystem fs = p.getFileSystem(conf);
                if (mode == LIVE_ENTRIES) {
                    liveEntries(fs, p, out);
                } else if (mode == DELETE) {
                    try {
                        if (!fs.delete(p, false) && fs.exists(p)) {
                            out.add(failure(item, "not deleted"));
                        }
                    } catch (IOException | RuntimeException e) {
                        out.add(failure(item, e.toString()));
                    }
                } else {
                    try {
                        RemoteIterator<LocatedFileStatus> it = fs.listFiles(p, true);
                        while (it.hasNext()) {
                            out.add(entry(it.next()));
                        }
                    } catch (FileNotFoundException e) {
                        // a folder removed while listing holds no files
                    }
                }
            }
            return out.iterator();
        }
    }

    private static void liveEntries(FileSystem fs, Path manifest, List<String> out) throws IOException {
        try (InputStream in = fs.open(manifest);
             DataFileStream<GenericRecord> reader = new DataFileStream<>(in, new GenericDatumReader<GenericRecord>())) {
            for (GenericRecord entry : reader) {
                if (((Number) entry.get("status")).intValue() == 2) {
                    continue;  // DELETED: no longer part of the snapshot
                }
                GenericRecord file = (GenericRecord) entry.get("data_file");
                Object content = file.getSchema().getField("content") != null ? file.get("content") : null;
                StringBuilder sb = new StringBuilder("[");
                Json.str(sb, file.get("file_path").toString()).append(',');
                out.add(sb.append(content == null ? 0 : ((Number) content).intValue()).append(']').toString());
            }
        } catch (IOException | RuntimeException e) {
            throw new IOException("cannot read manifest " + manifest + ": " + e, e);
        }
    }

    private static String failure(String path, String error) {
        StringBuilder sb = new StringBuilder("[");
        Json.str(sb, path).append(',');
        return Json.str(sb, error).append(']').toString();
    }

    private static String entry(FileStatus st) {
        StringBuilder sb = new StringBuilder("{");
        Json.key(sb, "path");
        Json.str(sb, st.getPath().toString()).append(',');
        Json.key(sb, "length").append(st.getLen()).append(',');
        Json.key(sb, "modified").append(st.getModificationTime()).append(',');
        Json.key(sb, "dir").append(st.isDirectory()).append('}');
        return sb.toString();
    }
}
