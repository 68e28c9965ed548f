CREATE TABLE warehouses (id INTEGER PRIMARY KEY, city TEXT NOT NULL);
CREATE TABLE stock (sku TEXT, warehouse_id INTEGER REFERENCES warehouses(id), quantity INTEGER, unit_price_cents INTEGER);
INSERT INTO warehouses VALUES (1, 'Lyon'), (2, 'Porto'), (3, 'Graz'), (4, 'Turku');
INSERT INTO stock VALUES
  ('A-100', 1, 12, 250), ('A-100', 2, 3, 250), ('B-210', 1, 0, 1999), ('B-210', 3, 7, 1999),
  ('C-330', 2, 40, 75), ('C-330', 3, 1, 75), ('D-404', 1, 5, 12000), ('E-505', 2, 0, 500),
  ('E-505', 3, 0, 500), ('F-606', 1, 9, 330), ('F-606', 2, 2, 330);
