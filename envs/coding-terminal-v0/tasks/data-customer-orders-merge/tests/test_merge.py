import csv
import io

OUT = "/app/out/customers_normalized.csv"
UNMATCHED = "/app/out/unmatched_orders.txt"

EXPECTED_CSV = b"customer_id,name,email,country,order_count,total_eur\n2,Fran\xc3\xa7ois \xc3\x98degaard,franois.degaard2@example.com,DK,0,0.00\n15,\xc3\x98degaard; J\xc3\xbcrgen,jrgen.degaard15@corp.example.net,US,2,1954.45\n29,Anna O'Brien,anna.obrien29@example.com,IE,2,2378.34\n37,Li Kowalski,li.kowalski37@mail.example.org,DE,1,159.87\n40,Anna M\xc3\xbcller,anna.mller40@corp.example.net,DE,2,4138.23\n41,Bj\xc3\xb6rn C\xc3\xb4t\xc3\xa9,bjrn.ct41@corp.example.net,FR,5,10251.76\n42,Priya Smith,priya.smith42@corp.example.net,ES,4,11023.56\n45,Tom\xc3\xa1s O'Brien,toms.obrien45@example.com,ES,1,374.60\n49,Li M\xc3\xbcller,li.mller49@corp.example.net,ES,0,0.00\n52,Bj\xc3\xb6rn Rossi,bjrn.rossi52@corp.example.net,NO,2,2683.82\n55,Anna Rossi,anna.rossi55@corp.example.net,US,1,3353.59\n59,Eva Garc\xc3\xada,eva.garca59@mail.example.org,NO,2,2483.51\n61,Anna Kowalski,anna.kowalski61@example.com,DK,2,3691.23\n63,\xc3\x81ngel \xc3\x98degaard,ngel.degaard63@corp.example.net,FR,3,1176.61\n75,Mary Sch\xc3\xa4fer,mary.schfer75@corp.example.net,PL,1,1202.63\n89,Li Kowalski,li.kowalski89@mail.example.org,DE,3,4071.64\n94,\xc3\x81ngel Ng,ngel.ng94@corp.example.net,IE,3,5144.13\n98,Jos\xc3\xa9 Ng,jos.ng98@example.com,DK,1,1429.26\n99,S\xc3\xb8ren Ng,sren.ng99@example.com,US,1,1845.08\n102,Jos\xc3\xa9 Dupont,jos.dupont102@example.com,DE,2,4352.57\n103,Zo\xc3\xab C\xc3\xb4t\xc3\xa9,zo.ct103@corp.example.net,DE,1,2390.97\n105,Ida O'Brien,ida.obrien105@corp.example.net,DE,5,12093.29\n109,Li Larsen,li.larsen109@corp.example.net,FR,4,6613.53\n116,Chlo\xc3\xa9 Rossi,chlo.rossi116@corp.example.net,US,2,5407.40\n122,Tom\xc3\xa1s C\xc3\xb4t\xc3\xa9,toms.ct122@corp.example.net,IT,1,1861.68\n124,Tie Winner,toms.larsen124@corp.example.net,SE,1,545.78\n130,Chlo\xc3\xa9 Dupont,chlo.dupont130@corp.example.net,ES,1,1186.82\n134,Eva Ng,eva.ng134@mail.example.org,DE,2,3687.90\n140,Zo\xc3\xab \xc3\x98degaard,zo.degaard140@example.com,PL,3,6932.42\n144,Chlo\xc3\xa9 Dupont,chlo.dupont144@corp.example.net,IT,8,15200.46\n150,Tom\xc3\xa1s C\xc3\xb4t\xc3\xa9,toms.ct150@corp.example.net,IT,1,3081.15\n165,\xc3\x81ngel Kowalski,ngel.kowalski165@mail.example.org,US,0,0.00\n167,Ida M\xc3\xbcller,ida.mller167@corp.example.net,US,2,4713.54\n169,Li \xc3\x98degaard,li.degaard169@corp.example.net,US,3,4164.06\n170,\xc3\x81ngel Garc\xc3\xada,ngel.garca170@example.com,NO,1,2980.26\n180,Jos\xc3\xa9 Garc\xc3\xada,jos.garca180@example.com,PL,1,3213.05\n199,Jos\xc3\xa9 M\xc3\xbcller,jos.mller199@example.com,NO,4,5262.40\n207,\xc3\x81ngel Garc\xc3\xada,ngel.garca207@mail.example.org,NO,3,3841.30\n225,Zo\xc3\xab Garc\xc3\xada,zo.garca225@mail.example.org,PL,1,962.68\n228,No\xc3\xabl Dupont,nol.dupont228@example.com,DE,4,8158.97\n237,Eva M\xc3\xbcller,eva.mller237@example.com,IE,2,3049.16\n241,Li Rossi,li.rossi241@mail.example.org,DE,1,2130.58\n244,Anna Dupont,anna.dupont244@corp.example.net,DE,2,3159.65\n255,Priya Rossi,priya.rossi255@mail.example.org,US,2,4562.22\n257,Tom\xc3\xa1s C\xc3\xb4t\xc3\xa9,toms.ct257@mail.example.org,DE,5,12992.84\n260,Li Dupont,li.dupont260@example.com,ES,2,6762.72\n272,Jos\xc3\xa9 Rossi,jos.rossi272@corp.example.net,ES,2,2262.96\n274,Zo\xc3\xab Garc\xc3\xada,zo.garca274@mail.example.org,IE,1,1471.20\n276,Chlo\xc3\xa9 Rossi,chlo.rossi276@example.com,IE,3,5638.06\n283,Fran\xc3\xa7ois Dupont,franois.dupont283@corp.example.net,IE,2,5159.01\n285,Li Rossi,li.rossi285@mail.example.org,NO,1,83.92\n286,No\xc3\xabl Rossi,nol.rossi286@corp.example.net,ES,1,74.70\n287,Ida O'Brien,ida.obrien287@example.com,NO,0,0.00\n296,Eva M\xc3\xbcller,eva.mller296@example.com,FR,0,0.00\n299,\xc3\x81ngel M\xc3\xbcller,ngel.mller299@example.com,DE,1,453.55\n305,Li Sch\xc3\xa4fer,li.schfer305@mail.example.org,FR,4,10886.02\n311,Priya Garc\xc3\xada,priya.garca311@example.com,IT,2,3807.70\n314,Jos\xc3\xa9 O'Brien,jos.obrien314@example.com,PL,2,3486.63\n322,Smith; Bj\xc3\xb6rn,bjrn.smith322@mail.example.org,FR,2,473.86\n323,Garc\xc3\xada; Fran\xc3\xa7ois,franois.garca323@corp.example.net,DE,3,7810.38\n339,Eva Kowalski,eva.kowalski339@mail.example.org,US,1,17.08\n357,Chlo\xc3\xa9 Ng,chlo.ng357@example.com,US,1,3037.36\n361,Smith; Eva,eva.smith361@example.com,IE,1,2240.70\n363,Anna Sch\xc3\xa4fer,anna.schfer363@mail.example.org,IE,2,3348.88\n379,Tom\xc3\xa1s Larsen,toms.larsen379@mail.example.org,US,2,4888.10\n381,S\xc3\xb8ren Sch\xc3\xa4fer,sren.schfer381@example.com,IE,6,11164.50\n385,No\xc3\xabl Larsen,nol.larsen385@example.com,IE,4,862.68\n396,Zo\xc3\xab M\xc3\xbcller,zo.mller396@example.com,IT,0,0.00\n398,Chlo\xc3\xa9 Rossi,chlo.rossi398@corp.example.net,FR,2,5472.36\n399,Priya Larsen,priya.larsen399@corp.example.net,ES,3,7384.39\n"

EXPECTED_UNMATCHED = b'SO-1110\nSO-1118\nSO-1140\nSO-1214\nSO-1217\nSO-1284\nSO-1299\nSO-1347\nSO-1350\nSO-1396\nSO-1414\nSO-1454\nSO-1491\nSO-1498\n'


def read(path):
    with open(path, "rb") as fh:
        return fh.read()


def test_csv_encoding_and_line_endings():
    data = read(OUT)
    assert not data.startswith(b"\xef\xbb\xbf"), "BOM found"
    assert b"\r" not in data
    data.decode("utf-8")


def test_csv_header_and_ids():
    rows = list(csv.reader(io.StringIO(read(OUT).decode("utf-8"), newline="")))
    exp = list(csv.reader(io.StringIO(EXPECTED_CSV.decode("utf-8"), newline="")))
    assert rows[0] == exp[0]
    assert [r[0] for r in rows[1:]] == [r[0] for r in exp[1:]]


def test_csv_names_emails_countries():
    rows = list(csv.reader(io.StringIO(read(OUT).decode("utf-8"), newline="")))
    exp = list(csv.reader(io.StringIO(EXPECTED_CSV.decode("utf-8"), newline="")))
    assert [r[:4] for r in rows] == [r[:4] for r in exp]


def test_csv_order_totals():
    rows = list(csv.reader(io.StringIO(read(OUT).decode("utf-8"), newline="")))
    exp = list(csv.reader(io.StringIO(EXPECTED_CSV.decode("utf-8"), newline="")))
    assert [(r[0], r[4], r[5]) for r in rows] == [(r[0], r[4], r[5]) for r in exp]


def test_csv_exact_bytes():
    assert read(OUT) == EXPECTED_CSV


def test_unmatched_orders():
    assert read(UNMATCHED) == EXPECTED_UNMATCHED
