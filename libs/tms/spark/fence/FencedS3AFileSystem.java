package tms.fence;

import java.io.IOException;
import java.net.URI;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.s3a.S3AFileSystem;

/** S3A, with deletes and renames held to {@link Fence}'s roots. */
public class FencedS3AFileSystem extends S3AFileSystem {
  private Fence.Root[] confRoots;

  @Override
  public void initialize(URI name, Configuration conf) throws IOException {
    super.initialize(name, conf);
    confRoots = Fence.fromConf(conf);
  }

  @Override
  public boolean delete(Path f, boolean recursive) throws IOException {
    Fence.check("delete", makeQualified(f), confRoots);
    return super.delete(f, recursive);
  }

  @Override
  public boolean rename(Path src, Path dst) throws IOException {
    Fence.check("rename", makeQualified(src), confRoots);
    Fence.check("rename to", makeQualified(dst), confRoots);
    return super.rename(src, dst);
  }
}
