import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Executors;

import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.ForbiddenException;
import org.apache.iceberg.exceptions.NamespaceNotEmptyException;
import org.apache.iceberg.exceptions.NoSuchNamespaceException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.exceptions.NotAuthorizedException;
import org.apache.iceberg.exceptions.ValidationException;
import org.apache.iceberg.rest.CatalogHandlers;
import org.apache.iceberg.rest.RESTUtil;
import org.apache.iceberg.rest.TmsRestMapper;
import org.apache.iceberg.rest.requests.CreateNamespaceRequest;
import org.apache.iceberg.rest.requests.CreateTableRequest;
import org.apache.iceberg.rest.requests.RegisterTableRequest;
import org.apache.iceberg.rest.requests.RenameTableRequest;
import org.apache.iceberg.rest.requests.UpdateNamespacePropertiesRequest;
import org.apache.iceberg.rest.requests.UpdateTableRequest;
import org.apache.iceberg.rest.responses.ConfigResponse;
import org.apache.iceberg.rest.responses.ErrorResponse;
import org.apache.iceberg.rest.responses.OAuthTokenResponse;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.ObjectMapper;

/**
 * An Iceberg REST catalog for tests: routing and JSON only. Every catalog operation is
 * Iceberg's own {@code CatalogHandlers} over a catalog Iceberg builds from properties
 * ({@code CatalogUtil.buildIcebergCatalog}: a JdbcCatalog on PostgreSQL, or the in-memory
 * catalog), served by the JDK's HTTP server on 127.0.0.1 only.
 *
 * <p>Usage: RestCatalogServer CONFIG.properties, where the file holds {@code server.port},
 * optionally {@code server.token} (every request but the token exchange must carry
 * {@code Authorization: Bearer TOKEN}) and {@code server.credential} ({@code id:secret},
 * exchanged for the token at {@code /v1/oauth/tokens}), {@code catalog.*} (the catalog's
 * properties) and {@code hadoop.*} (its Hadoop configuration: fs.s3a.* for S3A).
 * Prints "READY PORT" once it serves.
 */
public final class RestCatalogServer {
    private static final int THREADS = 8;
    private static final int NO_CONTENT = 204;
    private static final int BAD_REQUEST = 400;
    private static final int UNAUTHORIZED = 401;
    private static final int NOT_FOUND = 404;
    private static final int CONFLICT = 409;
    private static final int SERVER_ERROR = 500;

    private final ObjectMapper mapper = TmsRestMapper.mapper();
    private final Catalog catalog;
    private final SupportsNamespaces namespaces;
    private final byte[] token;
    private final String credential;

    private RestCatalogServer(Catalog catalog, String token, String credential) {
        this.catalog = catalog;
        this.namespaces = (SupportsNamespaces) catalog;
        this.token = token == null ? null : token.getBytes(StandardCharsets.UTF_8);
        this.credential = credential;
    }

    public static void main(String[] args) throws Exception {
        Properties conf = new Properties();
        try (InputStream in = new FileInputStream(args[0])) {
            conf.load(in);
        }
        Map<String, String> catalogProps = new HashMap<>();
        Configuration hadoop = new Configuration();
        for (String key : conf.stringPropertyNames()) {
            if (key.startsWith("catalog.")) {
                catalogProps.put(key.substring("catalog.".length()), conf.getProperty(key));
            } else if (key.startsWith("hadoop.")) {
                hadoop.set(key.substring("hadoop.".length()), conf.getProperty(key));
            }
        }
        Catalog catalog = CatalogUtil.buildIcebergCatalog("rest_backend", catalogProps, hadoop);
        RestCatalogServer handler = new RestCatalogServer(
            catalog, conf.getProperty("server.token"), conf.getProperty("server.credential"));
        int port = Integer.parseInt(conf.getProperty("server.port"));
        HttpServer server = HttpServer.create(
            new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 0);
        server.createContext("/", handler::handle);
        server.setExecutor(Executors.newFixedThreadPool(THREADS));
        server.start();
        System.out.println("READY " + port);
        System.out.flush();
    }

    private void handle(HttpExchange ex) throws IOException {
        try {
            String path = ex.getRequestURI().getRawPath();
            if (path.equals("/v1/oauth/tokens")) {
                tokens(ex);
            } else if (!authorized(ex)) {
                error(ex, UNAUTHORIZED, "NotAuthorizedException", "a valid bearer token is required");
            } else {
                route(ex, ex.getRequestMethod(), path.split("/"));
            }
        } catch (NoSuchNamespaceException | NoSuchTableException e) {
            error(ex, NOT_FOUND, e.getClass().getSimpleName(), e.getMessage());
        } catch (AlreadyExistsException | CommitFailedException | NamespaceNotEmptyException e) {
            error(ex, CONFLICT, e.getClass().getSimpleName(), e.getMessage());
        } catch (ValidationException | IllegalArgumentException e) {
            error(ex, BAD_REQUEST, e.getClass().getSimpleName(), e.getMessage());
        } catch (NotAuthorizedException | ForbiddenException e) {
            error(ex, UNAUTHORIZED, e.getClass().getSimpleName(), e.getMessage());
        } catch (RuntimeException e) {  // CommitStateUnknownException among them
            e.printStackTrace();
            error(ex, SERVER_ERROR, e.getClass().getSimpleName(), String.valueOf(e.getMessage()));
        } finally {
            ex.close();
        }
    }

    private boolean authorized(HttpExchange ex) {
        if (token == null) {
            return true;
        }
        String header = ex.getRequestHeaders().getFirst("Authorization");
        if (header == null || !header.startsWith("Bearer ")) {
            return false;
        }
        byte[] given = header.substring("Bearer ".length()).getBytes(StandardCharsets.UTF_8);
        return MessageDigest.isEqual(given, token);
    }

    /** The OAuth2 client-credentials exchange Iceberg's clients do for a {@code credential}. */
    private void tokens(HttpExchange ex) throws IOException {
        Map<String, String> form = RESTUtil.decodeFormData(body(ex));
        String given = form.get("client_id") + ":" + form.get("client_secret");
        if (token == null || credential == null
            || !MessageDigest.isEqual(given.getBytes(StandardCharsets.UTF_8),
                                      credential.getBytes(StandardCharsets.UTF_8))) {
            error(ex, UNAUTHORIZED, "NotAuthorizedException", "unknown client credential");
            return;
        }
        send(ex, OAuthTokenResponse.builder().withToken(new String(token, StandardCharsets.UTF_8))
            .withTokenType("bearer")
            .withIssuedTokenType("urn:ietf:params:oauth:token-type:access_token").build());
    }

    private void route(HttpExchange ex, String method, String[] p) throws IOException {
        // p[0] is "" (the leading slash), p[1] "v1"
        int n = p.length;
        if (n < 3 || !p[1].equals("v1")) {
            error(ex, NOT_FOUND, "NoSuchRoute", "no route " + method + " " + String.join("/", p));
        } else if (n == 3 && p[2].equals("config") && method.equals("GET")) {
            send(ex, ConfigResponse.builder().build());
        } else if (n == 4 && p[2].equals("tables") && p[3].equals("rename")
                   && method.equals("POST")) {
            CatalogHandlers.renameTable(catalog, read(ex, RenameTableRequest.class));
            send(ex, null);
        } else if (n >= 3 && p[2].equals("namespaces")) {
            namespaceRoute(ex, method, p);
        } else {
            error(ex, NOT_FOUND, "NoSuchRoute", "no route " + method + " " + String.join("/", p));
        }
    }

    private void namespaceRoute(HttpExchange ex, String method, String[] p) throws IOException {
        int n = p.length;
        Map<String, String> query = query(ex);
        if (n == 3) {
            if (method.equals("GET")) {
                String parent = query.get("parent");
                Namespace ns = parent == null ? Namespace.empty()
                    : RESTUtil.decodeNamespace(RESTUtil.encodeString(parent));
                send(ex, CatalogHandlers.listNamespaces(namespaces, ns));
            } else if (method.equals("POST")) {
                send(ex, CatalogHandlers.createNamespace(
                    namespaces, read(ex, CreateNamespaceRequest.class)));
            } else {
                notAllowed(ex, method, p);
            }
            return;
        }
        Namespace ns = RESTUtil.decodeNamespace(p[3]);
        if (n == 4) {
            switch (method) {
                case "GET" -> send(ex, CatalogHandlers.loadNamespace(namespaces, ns));
                case "HEAD" -> {
                    CatalogHandlers.namespaceExists(namespaces, ns);
                    send(ex, null);
                }
                case "DELETE" -> {
                    CatalogHandlers.dropNamespace(namespaces, ns);
                    send(ex, null);
                }
                default -> notAllowed(ex, method, p);
            }
        } else if (n == 5 && p[4].equals("properties") && method.equals("POST")) {
            send(ex, CatalogHandlers.updateNamespaceProperties(
                namespaces, ns, read(ex, UpdateNamespacePropertiesRequest.class)));
        } else if (n == 5 && p[4].equals("register") && method.equals("POST")) {
            send(ex, CatalogHandlers.registerTable(catalog, ns,
                                                   read(ex, RegisterTableRequest.class)));
        } else if (n == 5 && p[4].equals("tables")) {
            if (method.equals("GET")) {
                send(ex, CatalogHandlers.listTables(catalog, ns));
            } else if (method.equals("POST")) {
                CreateTableRequest req = read(ex, CreateTableRequest.class);
                send(ex, req.stageCreate() ? CatalogHandlers.stageTableCreate(catalog, ns, req)
                    : CatalogHandlers.createTable(catalog, ns, req));
            } else {
                notAllowed(ex, method, p);
            }
        } else if (n >= 6 && p[4].equals("tables")) {
            tableRoute(ex, method, p, TableIdentifier.of(ns, RESTUtil.decodeString(p[5])), query);
        } else {
            notAllowed(ex, method, p);
        }
    }

    private void tableRoute(HttpExchange ex, String method, String[] p, TableIdentifier ident,
                            Map<String, String> query) throws IOException {
        if (p.length == 7 && p[6].equals("metrics") && method.equals("POST")) {
            body(ex);  // scan reports are accepted and dropped
            send(ex, null);
            return;
        }
        if (p.length != 6) {
            notAllowed(ex, method, p);
            return;
        }
        switch (method) {
            case "GET" -> send(ex, CatalogHandlers.loadTable(catalog, ident));
            case "HEAD" -> {
                CatalogHandlers.tableExists(catalog, ident);
                send(ex, null);
            }
            case "POST" -> send(ex, CatalogHandlers.updateTable(
                catalog, ident, read(ex, UpdateTableRequest.class)));
            case "DELETE" -> {
                if (Boolean.parseBoolean(query.getOrDefault("purgeRequested", "false"))) {
                    CatalogHandlers.purgeTable(catalog, ident);
                } else {
                    CatalogHandlers.dropTable(catalog, ident);
                }
                send(ex, null);
            }
            default -> notAllowed(ex, method, p);
        }
    }

    private static Map<String, String> query(HttpExchange ex) {
        Map<String, String> out = new HashMap<>();
        String raw = ex.getRequestURI().getRawQuery();
        if (raw == null) {
            return out;
        }
        for (String pair : raw.split("&")) {
            int eq = pair.indexOf('=');
            String key = eq < 0 ? pair : pair.substring(0, eq);
            String value = eq < 0 ? "" : pair.substring(eq + 1);
            out.put(URLDecoder.decode(key, StandardCharsets.UTF_8),
                    URLDecoder.decode(value, StandardCharsets.UTF_8));
        }
        return out;
    }

    private static String body(HttpExchange ex) throws IOException {
        return new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
    }

    private <T> T read(HttpExchange ex, Class<T> type) throws IOException {
        return mapper.readValue(body(ex), type);
    }

    private void send(HttpExchange ex, Object response) throws IOException {
        if (response == null) {
            ex.sendResponseHeaders(NO_CONTENT, -1);
            return;
        }
        byte[] json = mapper.writeValueAsBytes(response);
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(200, json.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(json);
        }
    }

    private void notAllowed(HttpExchange ex, String method, String[] p) throws IOException {
        error(ex, NOT_FOUND, "NoSuchRoute", "no route " + method + " " + String.join("/", p));
    }

    private void error(HttpExchange ex, int code, String type, String message) throws IOException {
        ErrorResponse err = ErrorResponse.builder().responseCode(code).withType(type)
            .withMessage(message).build();
        byte[] json = mapper.writeValueAsBytes(err);
        ex.getResponseHeaders().set("Content-Type", "application/json");
        if (ex.getRequestMethod().equals("HEAD")) {
            ex.sendResponseHeaders(code, -1);
            return;
        }
        ex.sendResponseHeaders(code, json.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(json);
        }
    }
}
